"""Running a GraphQL document: its parse and validation cache, the selection
walker, its analysis, errors, the cost report and compiled plans.
"""
