"""Enums shared by the schema, named as clients see them."""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING

import strawberry

from datastore import entities

if TYPE_CHECKING:
    # To the type checker these are the datastore's enums, which is what resolvers receive.
    Plan = entities.Plan
    OrganizationStatus = entities.OrganizationStatus
    Role = entities.Role
    EmployeeStatus = entities.EmployeeStatus
    JobPostingStatus = entities.JobStatus
    ApplicationStatus = entities.ApplicationStatus
else:
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
