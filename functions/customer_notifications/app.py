"""customer-notifications: post each CustomerNotification to a webhook, exactly once in effect.

Leased mode: the message is claimed with a lease, the webhook is called with the message key as
its `Idempotency-Key` header, and the NOTIFICATION item commits with the inbox record only after
a 2xx, on condition that the lease is still this delivery's. A 4xx other than 408/409/429 is
poison (dead-lettered); 5xx, 408, 409, 429, timeouts and connection errors are transient (the
lease stays until it expires; the message comes back by redelivery).

A redirect is never followed: the notification and its key go to the configured URL or
nowhere (urllib would follow one to plain http or to any host, and would turn the POST into a
GET without its body). A permanent one (301, 308) is poison, as a 4xx is: every retry gets the
same answer until `NOTIFY_WEBHOOK_URL` names the new address. A temporary one (302, 303, 307) is
transient, as a 5xx is. The reason names where it pointed (scheme and host only), and whether
that is another scheme or host than the configured URL's.
"""

import ipaddress
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from datetime import timedelta

from pydantic import BaseModel, Field

from lambda_inbox import (
    ConfigurationError,
    InboxConsumer,
    LeaseContext,
    Leased,
    LeasePolicy,
    PoisonMessage,
    UnitOfWork,
)


def checked_webhook_url(url: str, plain_http_hosts: str = "") -> str:
    """`url` if it is `https`, or `http` to a loopback address (local runs) or to a host named in
    `plain_http_hosts` (comma-separated; set only by local container runs, never in the
    template). Anything else (`file:`, `ftp:`, plain `http` to another host) is a
    `ConfigurationError` at import: the function never starts with a URL it must not open."""
    if not url:
        return ""  # not configured: every call fails transiently, nothing is opened
    parsed = urllib.parse.urlsplit(url)
    host = parsed.hostname or ""
    if parsed.scheme == "https" and host:
        return url
    if parsed.scheme == "http" and host:
        allowed = {name.strip() for name in plain_http_hosts.split(",") if name.strip()}
        if _is_loopback(host) or host in allowed:
            return url
    raise ConfigurationError(
        f"NOTIFY_WEBHOOK_URL must be an https URL (http only to a loopback address), "
        f"not {parsed.scheme or 'no scheme'}://{host or '(no host)'}"
    )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


DOMAIN_TABLE = os.environ["DOMAIN_TABLE"]
WEBHOOK_URL = checked_webhook_url(
    os.environ.get("NOTIFY_WEBHOOK_URL", ""), os.environ.get("NOTIFY_WEBHOOK_PLAIN_HTTP_HOSTS", "")
)
LEASE_SECONDS = float(os.environ.get("NOTIFY_LEASE_SECONDS", "60"))
MAX_ATTEMPTS = int(os.environ.get("NOTIFY_MAX_ATTEMPTS", "5"))
#: Longest single webhook call, whatever the time left.
MAX_CALL_SECONDS = 10.0
#: 4xx answers that are worth retrying; every other 4xx is poison.
RETRYABLE_CLIENT_ERRORS = frozenset({408, 409, 429})
#: Redirects that say the address has moved for good: poison (the others are transient).
PERMANENT_REDIRECTS = frozenset({301, 308})


class CustomerNotification(BaseModel):
    event_id: str = Field(min_length=1)
    customer_id: str = Field(min_length=1)
    order_id: str = Field(min_length=1)
    template: str = Field(min_length=1)


class WebhookUnavailable(Exception):
    """A transient webhook failure: retried by redelivery under the same Idempotency-Key."""


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    """Follows no redirect: urllib then raises the 3xx as an `HTTPError` (`redirect_failure`)."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


#: The opener of every webhook call: urllib's defaults, with redirects refused.
_OPENER = urllib.request.build_opener(_RefuseRedirects)


def redirect_failure(url: str, status: int, location: str | None) -> Exception:
    """What a 3xx answer to a POST to `url` is: `PoisonMessage` when permanent (301, 308),
    `WebhookUnavailable` when temporary; never followed either way."""
    if not location:
        return WebhookUnavailable(f"webhook answered HTTP {status} without a Location")
    here = urllib.parse.urlsplit(url)
    there = urllib.parse.urlsplit(urllib.parse.urljoin(url, location))
    moved = f"{there.scheme}://{there.netloc}"
    if (there.scheme, there.netloc) != (here.scheme, here.netloc):
        moved = f"another scheme or host, {moved}"
    reason = f"webhook redirected (HTTP {status}) to {moved}; redirects are not followed"
    if status in PERMANENT_REDIRECTS:
        return PoisonMessage(f"{reason}: set NOTIFY_WEBHOOK_URL to the new address, then redrive")
    return WebhookUnavailable(reason)


def post_webhook(notification: CustomerNotification, lease: LeaseContext) -> None:
    if not WEBHOOK_URL:
        raise WebhookUnavailable("NOTIFY_WEBHOOK_URL is not set")
    timeout = min(MAX_CALL_SECONDS, lease.time_left())
    if timeout <= 0.05:
        raise WebhookUnavailable("no time left for the webhook call")
    body = json.dumps(
        {
            "customer_id": notification.customer_id,
            "order_id": notification.order_id,
            "template": notification.template,
        }
    ).encode("utf-8")
    request = urllib.request.Request(
        WEBHOOK_URL,
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "Idempotency-Key": lease.message_key},
    )
    location = None
    try:
        # The scheme was checked at import (checked_webhook_url): https, or http to loopback;
        # the opener follows no redirect, so the call goes nowhere else.
        with _OPENER.open(request, timeout=timeout) as response:
            status = response.status
    except urllib.error.HTTPError as error:
        status, location = error.code, error.headers.get("Location")
    except (OSError, ValueError) as error:  # URLError, timeouts, resets
        raise WebhookUnavailable(f"webhook call failed: {type(error).__name__}: {error}") from None
    if 200 <= status < 300:
        return
    if 300 <= status < 400:
        raise redirect_failure(WEBHOOK_URL, status, location)
    if 400 <= status < 500 and status not in RETRYABLE_CLIENT_ERRORS:
        raise PoisonMessage(f"webhook refused the notification: HTTP {status}")
    raise WebhookUnavailable(f"webhook answered HTTP {status}")


def record_notification(notification: CustomerNotification, uow: UnitOfWork) -> None:
    uow.put(
        DOMAIN_TABLE,
        {
            "pk": f"CUSTOMER#{notification.customer_id}",
            "sk": f"NOTIFICATION#{notification.event_id}",
            "status": "SENT",
            "order_id": notification.order_id,
            "template": notification.template,
        },
        condition="attribute_not_exists(pk)",
        label="notification",
    )
    uow.set_result(outcome="sent")


LEASE = LeasePolicy(duration=timedelta(seconds=LEASE_SECONDS), max_attempts=MAX_ATTEMPTS)

consumer = InboxConsumer(
    "customer-notifications",
    model=CustomerNotification,
    decide=record_notification,
    key="event_id",
    leased=Leased(post_webhook, lease=LEASE),
)


def handler(event: dict[str, object], context: object) -> dict[str, object]:
    return consumer.handle(event, context)
