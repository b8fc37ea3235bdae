"""``rspark serve``: live mode as an HTTP service with Server-Sent Events and a dashboard (docs/service.md)."""
