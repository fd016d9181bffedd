"""One organisation's data: departments, employees, jobs, applications, onboarding, documents, live items."""
