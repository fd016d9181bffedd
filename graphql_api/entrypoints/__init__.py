"""How the API process starts: the ASGI app for uvicorn, the Lambda handler,
uvicorn's options and its worker processes.
"""
