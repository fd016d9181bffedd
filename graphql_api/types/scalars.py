"""Enums shared by the schema, named as clients see them."""

from __future__ import annotations

from enum import Enum

import strawberry

from datastore import entities

Plan = strawberry.enum(entities.Plan, name="Plan")
OrganizationStatus = strawberry.enum(entities.OrganizationStatus, name="OrganizationStatus")
Role = strawberry.enum(entities.Role, name="Role")
EmployeeStatus = strawberry.enum(entities.EmployeeStatus, name="EmployeeStatus")
JobPostingStatus = strawberry.enum(entities.JobStatus, name="JobPostingStatus")
ApplicationStatus = strawberry.enum(entities.ApplicationStatus, name="ApplicationStatus")


@strawberry.enum(description="The order of a list by date: oldest first (ASC) or newest first (DESC).")
class SortOrder(Enum):
    ASC = "asc"
    DESC = "desc"
