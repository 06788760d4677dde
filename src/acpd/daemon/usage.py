"""`usage_update`: tokens in context and, when it is known, what the session has cost.

Rules:
- `used` is the last model call's prompt plus its reply (what now fills the context);
  `size` the context budget. Sent after every model call that reported usage.
- A call's cost is the provider's own figure when it reports one (OpenRouter's `usage.cost`,
  USD), else the configured price table (`[agent.prices."kind:model"]`, per million tokens),
  else unknown. Cached prompt tokens are priced only with a cache price in the table: no
  price is ever guessed.
- `cost` is cumulative over the session and persisted with it (daemon/settings.py), so a
  loaded session keeps counting. Once one call's cost is unknown, or two calls are priced in
  different currencies, the total is unknown for good and `cost` is left out: an
  undercount shown as a total would be a lie.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from acpd.providers.base import UsageEvent

if TYPE_CHECKING:
    from acpd.daemon.config import PriceConfig
    from acpd.daemon.session import Session

MTOK = 1_000_000
PROVIDER_CURRENCY = "USD"


@dataclass(slots=True)
class SessionCost:
    """The running total; `amount` None once it is unknown."""

    amount: float | None = 0.0
    currency: str | None = None

    def add(self, amount: float | None, currency: str) -> None:
        if self.amount is None:
            return
        if amount is None or (self.currency is not None and currency != self.currency):
            self.amount = None
            return
        self.amount += amount
        self.currency = currency

    def wire(self) -> dict[str, Any] | None:
        if self.amount is None or self.currency is None:
            return None
        return {"amount": round(self.amount, 10), "currency": self.currency}

    def to_dict(self) -> dict[str, Any]:
        return {"amount": self.amount, "currency": self.currency}

    @classmethod
    def from_dict(cls, data: Any) -> SessionCost:
        if not isinstance(data, dict) or "amount" not in data:
            return cls()  # nothing counted yet
        amount, currency = data.get("amount"), data.get("currency")
        ok_amount = amount is None or (isinstance(amount, int | float) and amount >= 0)
        ok_currency = currency is None or isinstance(currency, str)
        if not (ok_amount and ok_currency) or isinstance(amount, bool):
            return cls(None, None)  # damaged: unknown, not zero
        return cls(None if amount is None else float(amount), currency)


def find_price(prices: Mapping[str, PriceConfig], model: str | None) -> PriceConfig | None:
    """The price of `kind:model`, looked up as written, then by the bare model name."""
    if not model:
        return None
    return prices.get(model) or prices.get(model.partition(":")[2])


def call_cost(event: UsageEvent, price: PriceConfig | None) -> tuple[float | None, str]:
    """One model call's cost and its currency; (None, _) when it cannot be known."""
    if event.cost is not None:
        return event.cost, PROVIDER_CURRENCY
    if price is None:
        return None, PROVIDER_CURRENCY
    cached = event.cache_read_tokens + event.cache_write_tokens
    fresh = max(0, event.input_tokens - cached)
    total = fresh * price.input_per_mtok + event.output_tokens * price.output_per_mtok
    for tokens, rate in ((event.cache_read_tokens, price.cache_read_per_mtok),
                         (event.cache_write_tokens, price.cache_write_per_mtok)):
        if tokens:
            if rate is None:
                return None, price.currency
            total += tokens * rate
    return total / MTOK, price.currency


def usage_update(used: int, size: int, cost: SessionCost | None) -> dict[str, Any]:
    update: dict[str, Any] = {
        "sessionUpdate": "usage_update", "used": max(0, used), "size": max(0, size),
    }
    shown = cost.wire() if cost is not None else None
    if shown is not None:
        update["cost"] = shown
    return update


async def report_usage(
    session: Session, events: list[UsageEvent], size: int, prices: Mapping[str, PriceConfig]
) -> None:
    """Add one model call's cost to the session's total (stored with it) and tell the
    editor the context in use and the total, when it is known."""
    from acpd.daemon import settings

    used = sum(e.input_tokens + e.output_tokens for e in events)
    price = find_price(prices, session.model)
    total = session.settings.cost
    for event in events:
        total.add(*call_cost(event, price))
    settings.save(session.store, session.id, session.settings)
    await session.send(usage_update(used, size, total))
