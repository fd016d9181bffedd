"""Deployment to AWS: the CloudFormation template and the Lambda package, from the code's own definitions."""
