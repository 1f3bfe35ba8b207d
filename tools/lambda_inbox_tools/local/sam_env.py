"""The `--env-vars` document that points `sam local` containers at a local stack.

`sam local invoke` and `start-lambda` give a container the variables its function declares in
the template, with values from this document: `Parameters` for every function, then one object
per function (its logical ID), which wins. Undeclared names are dropped, so a template used with
it declares the endpoint and credential variables (scripts/sam_local.py derives such a copy).
"""

from __future__ import annotations

from ..services.offline import FAKE_CREDENTIAL
from .template import Stack

#: Credentials the local services accept; never real ones in a container.
OFFLINE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": FAKE_CREDENTIAL,
    "AWS_SECRET_ACCESS_KEY": FAKE_CREDENTIAL,
}
ENDPOINT_VARIABLES = ("AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_SQS")
#: SNS and EventBridge run on the SQS endpoint's moto server, with the template's topics and buses.
ROUTE_ENDPOINT_VARIABLES = ("AWS_ENDPOINT_URL_SNS", "AWS_ENDPOINT_URL_EVENTBRIDGE")
#: Every variable the document sets for all functions.
SHARED_VARIABLES = (*ENDPOINT_VARIABLES, *ROUTE_ENDPOINT_VARIABLES, *OFFLINE_CREDENTIALS)


def shared_variables(*, dynamodb_endpoint: str, sqs_endpoint: str) -> dict[str, str]:
    """The `Parameters` of the document: endpoints and offline credentials."""
    endpoints = dict(zip(ENDPOINT_VARIABLES, (dynamodb_endpoint, sqs_endpoint), strict=True))
    routes = dict.fromkeys(ROUTE_ENDPOINT_VARIABLES, sqs_endpoint)
    return {**endpoints, **routes, **OFFLINE_CREDENTIALS}


def sam_env_vars(
    stack: Stack, *, dynamodb_endpoint: str, sqs_endpoint: str
) -> dict[str, dict[str, str]]:
    """Endpoints and offline credentials for every function, and each function's own
    environment as the stack resolved it (table names, queue URLs, parameters)."""
    document = {
        "Parameters": shared_variables(
            dynamodb_endpoint=dynamodb_endpoint, sqs_endpoint=sqs_endpoint
        )
    }
    for function in stack.functions:
        document[function.logical_id] = dict(function.environment)
    return document
