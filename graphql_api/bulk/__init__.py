"""Bulk onboarding: one batch of importEmployees rows, and the CSV file
``server.py import`` streams into batches.
"""
