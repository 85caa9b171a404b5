"""The service's words, each declared once: engines, proxy tiers and output formats.

Whatever lists them derives from here: the request model (service.core.schemas), the auto ladder
(service.core.escalation), the costs' configuration, the proxy pools (middlewares.proxy_pool),
the result's fields (service.scrape.results), the dashboard's forms and the command line.

The formats are declared in service.core.formats (:data:`OUTPUTS`, re-exported here): what each
is made from, its producer's dotted path, its price rule, its field and its Firecrawl name.

Also here, because pricing, the auto ladder and the settlement share it: the residential trial.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, get_args

from service.core.formats import BUILT_IN, OUTPUTS, MadeFrom, Output, Outputs, needs_engine

Engine = Literal["static", "js"]
# cheapest first: the order in which proxy_type "auto" climbs them
Tier = Literal["none", "datacenter", "residential"]
Auto = Literal["auto"]
EngineRequested = Literal[Engine, Auto]
TierRequested = Literal[Tier, Auto]

ENGINES: Final[tuple[Engine, ...]] = get_args(Engine)
TIERS: Final[tuple[Tier, ...]] = get_args(Tier)
#: the formats this service makes on its own (service.core.formats declares them, and those a
#: deployment adds)
FORMATS: Final = BUILT_IN
AUTO: Final[Auto] = "auto"
DIRECT: Final[Tier] = TIERS[0]  # no proxy
RESIDENTIAL: Final[Tier] = "residential"
PROXY_TIERS: Final[tuple[Tier, ...]] = TIERS[1:]  # the tiers that go through a proxy pool
# what a target may answer instead of HTML and is converted (service.extraction.documents)
# the network fingerprint a static download presents (service.impersonation): Scrapy's own
# TLS and headers, or Chrome's ClientHello, HTTP/2 settings and header order
Fingerprint = Literal["scrapy", "chrome"]
FINGERPRINTS: Final[tuple[Fingerprint, ...]] = get_args(Fingerprint)
DocumentType = Literal["pdf", "docx", "pptx", "xlsx", "odt", "epub"]
DOCUMENT_TYPES: Final[tuple[DocumentType, ...]] = get_args(DocumentType)

__all__ = [
    "AUTO",
    "DIRECT",
    "DOCUMENT_TYPES",
    "ENGINES",
    "FINGERPRINTS",
    "FORMATS",
    "OUTPUTS",
    "PROXY_TIERS",
    "RESIDENTIAL",
    "TIERS",
    "MadeFrom",
    "Output",
    "Outputs",
    "ResidentialTrial",
    "needs_engine",
]


@dataclass(frozen=True, slots=True)
class ResidentialTrial:
    """A residential request from an account that is not unlocked is a trial: it needs a trial
    left and is held at the ``none`` cost. Through the residential pool it costs nothing (and
    uses the trial up); after a fallback to a direct connection it is billed direct.

    Pricing (service.billing.pricing), the auto ladder (service.core.escalation) and the
    settlement (pipelines.billing) ask this; PostgreSQL's hold and settle functions (service.db)
    say it again in PL/pgSQL.
    """

    unlocked: bool
    trials_left: int = 0

    def applies(self, tier: str) -> bool:
        """Whether a request at ``tier`` is a trial."""
        return tier == RESIDENTIAL and not self.unlocked

    def allows(self, tier: str) -> bool:
        """Whether the account may make a request at ``tier``."""
        return not self.applies(tier) or self.trials_left > 0

    def held_at(self, tier: str) -> str:
        """The tier whose cost a request at ``tier`` is held (the most it can be billed)."""
        return DIRECT if self.applies(tier) else tier

    @staticmethod
    def used_up(trial: bool, tier_used: str) -> bool:
        """Whether a trial request that succeeded at ``tier_used`` was free, using the trial
        up: it went through the residential pool."""
        return trial and tier_used == RESIDENTIAL
