"""Recognise anti-bot block and challenge pages, with no Scrapy in sight.

``detect_block(status, headers, body)`` names the vendor whose block page or challenge
interstitial a response is (Cloudflare, DataDome, PerimeterX / HUMAN, Akamai Bot Manager,
Imperva / Incapsula, AWS WAF, Sucuri, Kasada), or the widget of a page that is nothing but a
CAPTCHA (reCAPTCHA, hCaptcha, Turnstile), or None. The rules are one table
(:mod:`service.antibot.rules`), walked by :mod:`service.antibot.detector`; the page shape
they check is measured in :mod:`service.antibot.page`. ``middlewares.antibot`` runs the
detector on every downloaded response.
"""

from __future__ import annotations

from service.antibot.detector import detect_block
from service.antibot.rules import RULES, VENDORS

__all__ = ["RULES", "VENDORS", "detect_block"]
