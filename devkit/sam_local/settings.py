"""Where `make sam-local` works, what it runs, and its time limits."""

from __future__ import annotations

from devkit.paths import REPO_ROOT
from lambda_inbox_tools.local.sam_env import (
    SHARED_VARIABLES,
)

TEMPLATE = REPO_ROOT / "template.yaml"
EVENTS_DIR = REPO_ROOT / "events"
WORK_DIR = REPO_ROOT / ".aws-sam-local"
DEFAULT_IMAGE = "lambda-inbox/python:3.13-x86_64-local"
REGION = "us-east-1"
LOCAL_ARCHITECTURE = "x86_64"
#: PLATFORM of layers/inbox/Makefile for x86_64 wheels (its default is the arm64 one).
LAYER_PLATFORM = "manylinux2014_x86_64"
ELF_MACHINE_X86_64 = 62
#: Set by scripts/build-lambda-image.sh on the image, inherited by SAM CLI's containers.
IMAGE_LABEL = "org.lambda-inbox.image-recipe"
#: The webhook receiver is reached over plain http at the bridge address, which is not loopback:
#: customer_notifications accepts that only for the hosts this variable names (local runs only).
PLAIN_HTTP_HOSTS_VARIABLE = "NOTIFY_WEBHOOK_PLAIN_HTTP_HOSTS"
#: Declared in every function of the derived template so that `--env-vars` can set them.
LOCAL_VARIABLES = (*SHARED_VARIABLES, PLAIN_HTTP_HOSTS_VARIABLE)
SEEDED_STOCK = 100

SAM_TIMEOUT = 300.0  # one `sam local invoke`, including the image build SAM does for the layer
BUILD_TIMEOUT = 900.0
IMAGE_TIMEOUT = 1800.0
SERVICE_TIMEOUT = 90.0
START_LAMBDA_TIMEOUT = 300.0
LOCAL_STACK_TIMEOUT = 600.0  # the demo workload through start-lambda, report included
INVOKE_TIMEOUT = 120.0


class SamLocalError(Exception):
    """A step failed; the message says which and why (meant for a person)."""


#: Where the services listen for the containers: every interface (the bridge included).
# The containers reach the host at the bridge address (B104).
ANY_INTERFACE = "0.0.0.0"  # nosec B104
