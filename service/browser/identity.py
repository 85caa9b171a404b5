"""One browser identity per context: what the ``js`` engine says it is, said the same everywhere.

Pages compare what a browser says of itself in several places: the ``User-Agent`` header and
``navigator.userAgent``, ``navigator.userAgentData`` and the ``Sec-CH-UA*`` headers, the
platform, ``navigator.languages`` and ``Accept-Language``, the time zone, the screen and the
window. Out of the box the system Chromium says ``HeadlessChrome`` in some of them (the headless
shell in its client hints too), sends no ``Accept-Language`` at all (the shell), runs in UTC and
has a window exactly as large as its page. An :class:`Identity` is the desktop (or phone) browser
that Chromium really is, its real version in the reduced form Chrome sends
(``Chrome/156.0.0.0``), without the ``Headless``, with the location's languages and time zone.

It is applied in two layers (:func:`apply`), because no single one reaches everything:

* the context's options (:meth:`Identity.context_options`): Playwright sets the user agent on
  every target of the context (each frame, worker, service worker), and the time zone (and a
  phone's screen and device metrics);
* ``Emulation.setUserAgentOverride`` on the page's own target, through a CDP session kept for the
  page's life, with the full ``userAgentMetadata`` (brands, full version list, platform), the
  languages and ``navigator.platform``: Playwright's own override carries no brands (Chromium then
  reports its own, ``HeadlessChrome`` in the shell) and takes one locale only, which it also adds
  to every sub-resource as an extra header, out of Chrome's order. A desktop's page is given its
  size and screen there too, in a window the browser starts taller than the page, as a desktop
  window with its tabs and toolbar is (:data:`WINDOW_SIZE`): no window is resized
  (docs/decisions/0051).

``SCRAPESPY_BROWSER_IDENTITY=honest`` keeps all of it but the user agent, which names the service
(``USER_AGENT``, as the static engine sends it): the polite way, for operators who want one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from service.core.places import COUNTRIES

if TYPE_CHECKING:
    from patchright.async_api import CDPSession

BROWSER = "browser"
HONEST = "honest"
IDENTITIES = (BROWSER, HONEST)

# Without a location: a US visitor's languages and time zone (what most sites expect of an
# English-speaking desktop browser; UTC is what only servers run in).
DEFAULT_LANGUAGES = ("en-US",)
DEFAULT_COUNTRY = "us"
# A desktop browser: Chrome maximized on a 1366x768 laptop screen (among the most common),
# under a 27 px desktop bar: a window of 1366x741, its page 87 px shorter (tabs and toolbar).
# Not Playwright's 1280x720 default, which detectors look for (rebrowser's "viewport" test).
SCREEN = {"width": 1366, "height": 768}
VIEWPORT = {"width": 1366, "height": 654}
WINDOW_FRAME = 87  # CSS pixels of tabs and toolbar: outerHeight - innerHeight
# the size the browser gives every window it opens (service.browser.launch)
WINDOW_SIZE = f"{VIEWPORT['width']},{VIEWPORT['height'] + WINDOW_FRAME}"
# the page and screen of a desktop, as Playwright's viewport and screen options would set them
DESKTOP_METRICS = {
    "width": VIEWPORT["width"],
    "height": VIEWPORT["height"],
    "screenWidth": SCREEN["width"],
    "screenHeight": SCREEN["height"],
    "deviceScaleFactor": 1,
    "mobile": False,
    "screenOrientation": {"angle": 0, "type": "landscapePrimary"},
}
# A phone: Chrome on a Pixel 7, as Playwright's descriptor measures it
PHONE_MODEL = "Pixel 7"
PHONE_ANDROID = "14"
PHONE_SCREEN = {"width": 412, "height": 915}
PHONE_VIEWPORT = {"width": 412, "height": 839}
PHONE_SCALE = 2.625
# The brand Chromium puts first, with the greasing it computes for its version (Chromium's
# user_agent_utils: GenerateBrandVersionList, seeded by the major version)
_GREASE_CHARS = (" ", "(", ":", "-", ".", "/", ")", ";", "=", "?", "_")
_GREASE_VERSIONS = ("8", "99", "24")


@dataclass(frozen=True)
class Identity:
    """What one context says it is; its fields are what a session keeps (:meth:`stored`)."""

    version: str  # the browser's full version, e.g. 156.0.8078.108
    languages: tuple[str, ...]  # navigator.languages, most preferred first
    time_zone: str  # IANA
    mobile: bool = False
    honest_agent: str | None = None  # the self-naming user agent, when the operator wants one

    @property
    def major(self) -> str:
        return self.version.split(".", 1)[0]

    @property
    def browser_agent(self) -> str:
        """Chrome's own (reduced) user agent for this version and platform."""
        if self.mobile:
            return (
                "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) "
                f"Chrome/{self.major}.0.0.0 Mobile Safari/537.36"
            )
        return (
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
            f"Chrome/{self.major}.0.0.0 Safari/537.36"
        )

    @property
    def user_agent(self) -> str:
        return self.honest_agent or self.browser_agent

    @property
    def label(self) -> str:
        """The result's ``attempts[].fingerprint``: which identity an attempt went out with."""
        kind = HONEST if self.honest_agent else "chrome"
        device = "android" if self.mobile else "linux"
        return f"{kind}-{self.major}-{device}"

    @property
    def accept_language(self) -> str:
        """The languages as Chromium is given them; it adds the q-values itself
        (``de-DE,de`` goes out as ``de-DE,de;q=0.9``)."""
        return ",".join(self.languages)

    def context_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"user_agent": self.user_agent, "timezone_id": self.time_zone}
        if self.mobile:
            options.update(
                viewport=dict(PHONE_VIEWPORT),
                screen=dict(PHONE_SCREEN),
                device_scale_factor=PHONE_SCALE,
                is_mobile=True,
                has_touch=True,
            )
        else:
            options.update(no_viewport=True)  # sized by apply, in the window it starts in
        return options

    def metadata(self) -> dict[str, Any]:
        """CDP's ``userAgentMetadata``: what ``navigator.userAgentData`` and ``Sec-CH-UA*`` say."""
        brands = _brands(self.major, self.version)
        return {
            "brands": [{"brand": b, "version": v.split(".", 1)[0]} for b, v in brands],
            "fullVersionList": [{"brand": b, "version": v} for b, v in brands],
            "fullVersion": self.version,
            "platform": "Android" if self.mobile else "Linux",
            "platformVersion": PHONE_ANDROID + ".0.0" if self.mobile else "",
            "architecture": "" if self.mobile else "x86",
            "model": PHONE_MODEL if self.mobile else "",
            "mobile": self.mobile,
            "bitness": "" if self.mobile else "64",
            "wow64": False,
        }

    def override(self, native: tuple[str, ...] = ()) -> dict[str, Any]:
        """``Emulation.setUserAgentOverride``'s; the languages only when they are not the
        browser's own (``native``): emulated, Chromium sends ``Accept-Language`` right after
        ``User-Agent``, its own goes last, where Chrome puts it."""
        languages = {} if self.languages == native else {"acceptLanguage": self.accept_language}
        return {
            "userAgent": self.user_agent,
            **languages,
            "platform": "Linux armv81" if self.mobile else "Linux x86_64",
            "userAgentMetadata": self.metadata(),
        }

    def stored(self) -> dict[str, Any]:
        """What a session keeps, so its next calls present the same browser."""
        return {"languages": list(self.languages), "time_zone": self.time_zone}


def _brands(major: str, version: str) -> list[tuple[str, str]]:
    """Chromium's brand list for ``major``, as the full Chromium reports it: its greased brand
    and Chromium, ordered by the major version (Chromium's user_agent_utils, seeded by it)."""
    seed = int(major) if major.isdigit() else 0
    grease = (
        f"Not{_GREASE_CHARS[seed % len(_GREASE_CHARS)]}A"
        f"{_GREASE_CHARS[(seed + 1) % len(_GREASE_CHARS)]}Brand"
    )
    entries = [(grease, _GREASE_VERSIONS[seed % len(_GREASE_VERSIONS)] + ".0.0.0")]
    entries.append(("Chromium", version))
    return entries if seed % 2 == 0 else entries[::-1]


def languages_of(languages: tuple[str, ...]) -> tuple[str, ...]:
    """``navigator.languages`` for a visitor asking for ``languages``: each regional one
    followed by its base language, as Chrome's language settings add it (``de-DE``, ``de``)."""
    spoken: list[str] = []
    for language in languages or DEFAULT_LANGUAGES:
        for one in (language, language.split("-", 1)[0]):
            if one not in spoken:
                spoken.append(one)
    return tuple(spoken)


def identity_for(
    version: str,
    *,
    languages: tuple[str, ...] = (),
    country: str | None = None,
    mobile: bool = False,
    honest_agent: str | None = None,
    stored: dict[str, Any] | None = None,
) -> Identity:
    """The identity of a context: the location's languages and time zone, else a session's
    (``stored``), else a US visitor's."""
    if languages or country is not None or not stored:
        zone = COUNTRIES[country or DEFAULT_COUNTRY].time_zone
        spoken = languages_of(languages)
    else:
        zone = str(stored.get("time_zone") or COUNTRIES[DEFAULT_COUNTRY].time_zone)
        spoken = tuple(stored.get("languages") or ()) or languages_of(())
    return Identity(version, spoken, zone, mobile=mobile, honest_agent=honest_agent)


async def apply(
    identity: Identity,
    session: CDPSession,
    *,
    shell: bool = False,
    native: tuple[str, ...] = (),
    target: dict[str, Any],
) -> None:
    """The page-level layer (the module's docstring), on the page's ``session``, which must
    live as long as the page (Chromium drops a session's overrides when it detaches);
    ``target`` is the page's ``Target.getTargetInfo`` (its browser context).

    The headless ``shell`` has no notifications: ``Notification.permission`` is ``denied``
    while ``permissions.query`` says ``prompt``, a contradiction no desktop browser shows; the
    query is told ``denied`` too (the full Chromium says ``default`` and ``prompt``)."""
    if shell:
        await session.send(
            "Browser.setPermission",
            {
                "permission": {"name": "notifications"},
                "setting": "denied",
                "browserContextId": target["browserContextId"],
            },
        )
    await session.send("Emulation.setUserAgentOverride", identity.override(native))
    await session.send("Emulation.setLocaleOverride", {"locale": identity.languages[0]})
    if not identity.mobile:
        await session.send("Emulation.setDeviceMetricsOverride", DESKTOP_METRICS)
