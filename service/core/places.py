"""Countries a scrape may be fetched from: ISO 3166-1 alpha-2 codes, and what a visitor there
looks like (a representative IANA time zone and the country's most used language).

The operator tags a proxy with its country, ``de=http://user:password@host:port``
(:func:`split_tag`), in ``SCRAPESPY_PROXIES_<TIER>`` and the pool files alike; an untagged
proxy has no country. A request's ``location`` (service.core.schemas) names a country that some
proxy of its tier must be tagged with (:func:`check_location`); it is fetched through those
proxies only, with ``Accept-Language`` from its ``languages`` (by default the country's
language) and, for ``js``, the browser's locale and time zone set to match.

The table was generated from tzdata's ``zone.tab`` (the zone of the capital or the most populous
region where a country has several) and CLDR's likely subtags (the language), both as shipped
in 2026; it is data, not code, and changes only when ISO 3166-1 does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final, NamedTuple


class Country(NamedTuple):
    name: str
    time_zone: str  # IANA
    language: str  # BCP 47, the Accept-Language a visitor there sends first


# ISO 3166-1 alpha-2 code (lower case) -> the country
COUNTRIES: Final[Mapping[str, Country]] = {
    "ad": Country("Andorra", "Europe/Andorra", "ca-AD"),
    "ae": Country("United Arab Emirates", "Asia/Dubai", "ar-AE"),
    "af": Country("Afghanistan", "Asia/Kabul", "fa-AF"),
    "ag": Country("Antigua & Barbuda", "America/Antigua", "en-AG"),
    "ai": Country("Anguilla", "America/Anguilla", "en-AI"),
    "al": Country("Albania", "Europe/Tirane", "sq-AL"),
    "am": Country("Armenia", "Asia/Yerevan", "hy-AM"),
    "ao": Country("Angola", "Africa/Luanda", "pt-AO"),
    "aq": Country("Antarctica", "Antarctica/McMurdo", "en-AQ"),
    "ar": Country("Argentina", "America/Argentina/Buenos_Aires", "es-AR"),
    "as": Country("American Samoa", "Pacific/Pago_Pago", "sm-AS"),
    "at": Country("Austria", "Europe/Vienna", "de-AT"),
    "au": Country("Australia", "Australia/Sydney", "en-AU"),
    "aw": Country("Aruba", "America/Aruba", "nl-AW"),
    "ax": Country("Åland Islands", "Europe/Mariehamn", "sv-AX"),
    "az": Country("Azerbaijan", "Asia/Baku", "az-AZ"),
    "ba": Country("Bosnia & Herzegovina", "Europe/Sarajevo", "bs-BA"),
    "bb": Country("Barbados", "America/Barbados", "en-BB"),
    "bd": Country("Bangladesh", "Asia/Dhaka", "bn-BD"),
    "be": Country("Belgium", "Europe/Brussels", "nl-BE"),
    "bf": Country("Burkina Faso", "Africa/Ouagadougou", "fr-BF"),
    "bg": Country("Bulgaria", "Europe/Sofia", "bg-BG"),
    "bh": Country("Bahrain", "Asia/Bahrain", "ar-BH"),
    "bi": Country("Burundi", "Africa/Bujumbura", "rn-BI"),
    "bj": Country("Benin", "Africa/Porto-Novo", "fr-BJ"),
    "bl": Country("St. Barthélemy", "America/St_Barthelemy", "fr-BL"),
    "bm": Country("Bermuda", "Atlantic/Bermuda", "en-BM"),
    "bn": Country("Brunei", "Asia/Brunei", "ms-BN"),
    "bo": Country("Bolivia", "America/La_Paz", "es-BO"),
    "bq": Country("Caribbean Netherlands", "America/Kralendijk", "pap-BQ"),
    "br": Country("Brazil", "America/Sao_Paulo", "pt-BR"),
    "bs": Country("Bahamas", "America/Nassau", "en-BS"),
    "bt": Country("Bhutan", "Asia/Thimphu", "dz-BT"),
    "bv": Country("Bouvet Island", "Europe/Oslo", "no-BV"),
    "bw": Country("Botswana", "Africa/Gaborone", "en-BW"),
    "by": Country("Belarus", "Europe/Minsk", "ru-BY"),
    "bz": Country("Belize", "America/Belize", "en-BZ"),
    "ca": Country("Canada", "America/Toronto", "en-CA"),
    "cc": Country("Cocos (Keeling) Islands", "Indian/Cocos", "ms-CC"),
    "cd": Country("Congo - Kinshasa", "Africa/Kinshasa", "fr-CD"),
    "cf": Country("Central African Republic", "Africa/Bangui", "sg-CF"),
    "cg": Country("Congo - Brazzaville", "Africa/Brazzaville", "fr-CG"),
    "ch": Country("Switzerland", "Europe/Zurich", "de-CH"),
    "ci": Country("Côte d’Ivoire", "Africa/Abidjan", "fr-CI"),
    "ck": Country("Cook Islands", "Pacific/Rarotonga", "en-CK"),
    "cl": Country("Chile", "America/Santiago", "es-CL"),
    "cm": Country("Cameroon", "Africa/Douala", "fr-CM"),
    "cn": Country("China", "Asia/Shanghai", "zh-CN"),
    "co": Country("Colombia", "America/Bogota", "es-CO"),
    "cr": Country("Costa Rica", "America/Costa_Rica", "es-CR"),
    "cu": Country("Cuba", "America/Havana", "es-CU"),
    "cv": Country("Cape Verde", "Atlantic/Cape_Verde", "pt-CV"),
    "cw": Country("Curaçao", "America/Curacao", "pap-CW"),
    "cx": Country("Christmas Island", "Indian/Christmas", "en-CX"),
    "cy": Country("Cyprus", "Asia/Nicosia", "el-CY"),
    "cz": Country("Czechia", "Europe/Prague", "cs-CZ"),
    "de": Country("Germany", "Europe/Berlin", "de-DE"),
    "dj": Country("Djibouti", "Africa/Djibouti", "fr-DJ"),
    "dk": Country("Denmark", "Europe/Copenhagen", "da-DK"),
    "dm": Country("Dominica", "America/Dominica", "en-DM"),
    "do": Country("Dominican Republic", "America/Santo_Domingo", "es-DO"),
    "dz": Country("Algeria", "Africa/Algiers", "ar-DZ"),
    "ec": Country("Ecuador", "America/Guayaquil", "es-EC"),
    "ee": Country("Estonia", "Europe/Tallinn", "et-EE"),
    "eg": Country("Egypt", "Africa/Cairo", "ar-EG"),
    "eh": Country("Western Sahara", "Africa/El_Aaiun", "ar-EH"),
    "er": Country("Eritrea", "Africa/Asmara", "ti-ER"),
    "es": Country("Spain", "Europe/Madrid", "es-ES"),
    "et": Country("Ethiopia", "Africa/Addis_Ababa", "am-ET"),
    "fi": Country("Finland", "Europe/Helsinki", "fi-FI"),
    "fj": Country("Fiji", "Pacific/Fiji", "en-FJ"),
    "fk": Country("Falkland Islands", "Atlantic/Stanley", "en-FK"),
    "fm": Country("Micronesia", "Pacific/Pohnpei", "en-FM"),
    "fo": Country("Faroe Islands", "Atlantic/Faroe", "fo-FO"),
    "fr": Country("France", "Europe/Paris", "fr-FR"),
    "ga": Country("Gabon", "Africa/Libreville", "fr-GA"),
    "gb": Country("United Kingdom", "Europe/London", "en-GB"),
    "gd": Country("Grenada", "America/Grenada", "en-GD"),
    "ge": Country("Georgia", "Asia/Tbilisi", "ka-GE"),
    "gf": Country("French Guiana", "America/Cayenne", "fr-GF"),
    "gg": Country("Guernsey", "Europe/Guernsey", "en-GG"),
    "gh": Country("Ghana", "Africa/Accra", "ak-GH"),
    "gi": Country("Gibraltar", "Europe/Gibraltar", "en-GI"),
    "gl": Country("Greenland", "America/Nuuk", "kl-GL"),
    "gm": Country("Gambia", "Africa/Banjul", "en-GM"),
    "gn": Country("Guinea", "Africa/Conakry", "fr-GN"),
    "gp": Country("Guadeloupe", "America/Guadeloupe", "fr-GP"),
    "gq": Country("Equatorial Guinea", "Africa/Malabo", "es-GQ"),
    "gr": Country("Greece", "Europe/Athens", "el-GR"),
    "gs": Country("South Georgia & South Sandwich Islands", "Atlantic/South_Georgia", "en-GS"),
    "gt": Country("Guatemala", "America/Guatemala", "es-GT"),
    "gu": Country("Guam", "Pacific/Guam", "en-GU"),
    "gw": Country("Guinea-Bissau", "Africa/Bissau", "pt-GW"),
    "gy": Country("Guyana", "America/Guyana", "en-GY"),
    "hk": Country("Hong Kong SAR China", "Asia/Hong_Kong", "zh-HK"),
    "hm": Country("Heard Island & McDonald Islands", "Indian/Kerguelen", "en-HM"),
    "hn": Country("Honduras", "America/Tegucigalpa", "es-HN"),
    "hr": Country("Croatia", "Europe/Zagreb", "hr-HR"),
    "ht": Country("Haiti", "America/Port-au-Prince", "ht-HT"),
    "hu": Country("Hungary", "Europe/Budapest", "hu-HU"),
    "id": Country("Indonesia", "Asia/Jakarta", "id-ID"),
    "ie": Country("Ireland", "Europe/Dublin", "en-IE"),
    "il": Country("Israel", "Asia/Jerusalem", "he-IL"),
    "im": Country("Isle of Man", "Europe/Isle_of_Man", "en-IM"),
    "in": Country("India", "Asia/Kolkata", "hi-IN"),
    "io": Country("British Indian Ocean Territory", "Indian/Chagos", "en-IO"),
    "iq": Country("Iraq", "Asia/Baghdad", "ar-IQ"),
    "ir": Country("Iran", "Asia/Tehran", "fa-IR"),
    "is": Country("Iceland", "Atlantic/Reykjavik", "is-IS"),
    "it": Country("Italy", "Europe/Rome", "it-IT"),
    "je": Country("Jersey", "Europe/Jersey", "en-JE"),
    "jm": Country("Jamaica", "America/Jamaica", "en-JM"),
    "jo": Country("Jordan", "Asia/Amman", "ar-JO"),
    "jp": Country("Japan", "Asia/Tokyo", "ja-JP"),
    "ke": Country("Kenya", "Africa/Nairobi", "sw-KE"),
    "kg": Country("Kyrgyzstan", "Asia/Bishkek", "ky-KG"),
    "kh": Country("Cambodia", "Asia/Phnom_Penh", "km-KH"),
    "ki": Country("Kiribati", "Pacific/Tarawa", "en-KI"),
    "km": Country("Comoros", "Indian/Comoro", "ar-KM"),
    "kn": Country("St. Kitts & Nevis", "America/St_Kitts", "en-KN"),
    "kp": Country("North Korea", "Asia/Pyongyang", "ko-KP"),
    "kr": Country("South Korea", "Asia/Seoul", "ko-KR"),
    "kw": Country("Kuwait", "Asia/Kuwait", "ar-KW"),
    "ky": Country("Cayman Islands", "America/Cayman", "en-KY"),
    "kz": Country("Kazakhstan", "Asia/Almaty", "ru-KZ"),
    "la": Country("Laos", "Asia/Vientiane", "lo-LA"),
    "lb": Country("Lebanon", "Asia/Beirut", "ar-LB"),
    "lc": Country("St. Lucia", "America/St_Lucia", "en-LC"),
    "li": Country("Liechtenstein", "Europe/Vaduz", "de-LI"),
    "lk": Country("Sri Lanka", "Asia/Colombo", "si-LK"),
    "lr": Country("Liberia", "Africa/Monrovia", "en-LR"),
    "ls": Country("Lesotho", "Africa/Maseru", "st-LS"),
    "lt": Country("Lithuania", "Europe/Vilnius", "lt-LT"),
    "lu": Country("Luxembourg", "Europe/Luxembourg", "fr-LU"),
    "lv": Country("Latvia", "Europe/Riga", "lv-LV"),
    "ly": Country("Libya", "Africa/Tripoli", "ar-LY"),
    "ma": Country("Morocco", "Africa/Casablanca", "ar-MA"),
    "mc": Country("Monaco", "Europe/Monaco", "fr-MC"),
    "md": Country("Moldova", "Europe/Chisinau", "ro-MD"),
    "me": Country("Montenegro", "Europe/Podgorica", "sr-ME"),
    "mf": Country("St. Martin", "America/Marigot", "fr-MF"),
    "mg": Country("Madagascar", "Indian/Antananarivo", "mg-MG"),
    "mh": Country("Marshall Islands", "Pacific/Majuro", "en-MH"),
    "mk": Country("North Macedonia", "Europe/Skopje", "mk-MK"),
    "ml": Country("Mali", "Africa/Bamako", "bm-ML"),
    "mm": Country("Myanmar (Burma)", "Asia/Yangon", "my-MM"),
    "mn": Country("Mongolia", "Asia/Ulaanbaatar", "mn-MN"),
    "mo": Country("Macao SAR China", "Asia/Macau", "zh-MO"),
    "mp": Country("Northern Mariana Islands", "Pacific/Saipan", "en-MP"),
    "mq": Country("Martinique", "America/Martinique", "fr-MQ"),
    "mr": Country("Mauritania", "Africa/Nouakchott", "ar-MR"),
    "ms": Country("Montserrat", "America/Montserrat", "en-MS"),
    "mt": Country("Malta", "Europe/Malta", "mt-MT"),
    "mu": Country("Mauritius", "Indian/Mauritius", "fr-MU"),
    "mv": Country("Maldives", "Indian/Maldives", "dv-MV"),
    "mw": Country("Malawi", "Africa/Blantyre", "en-MW"),
    "mx": Country("Mexico", "America/Mexico_City", "es-MX"),
    "my": Country("Malaysia", "Asia/Kuala_Lumpur", "ms-MY"),
    "mz": Country("Mozambique", "Africa/Maputo", "pt-MZ"),
    "na": Country("Namibia", "Africa/Windhoek", "af-NA"),
    "nc": Country("New Caledonia", "Pacific/Noumea", "fr-NC"),
    "ne": Country("Niger", "Africa/Niamey", "ha-NE"),
    "nf": Country("Norfolk Island", "Pacific/Norfolk", "en-NF"),
    "ng": Country("Nigeria", "Africa/Lagos", "en-NG"),
    "ni": Country("Nicaragua", "America/Managua", "es-NI"),
    "nl": Country("Netherlands", "Europe/Amsterdam", "nl-NL"),
    "no": Country("Norway", "Europe/Oslo", "nb-NO"),
    "np": Country("Nepal", "Asia/Kathmandu", "ne-NP"),
    "nr": Country("Nauru", "Pacific/Nauru", "en-NR"),
    "nu": Country("Niue", "Pacific/Niue", "en-NU"),
    "nz": Country("New Zealand", "Pacific/Auckland", "en-NZ"),
    "om": Country("Oman", "Asia/Muscat", "ar-OM"),
    "pa": Country("Panama", "America/Panama", "es-PA"),
    "pe": Country("Peru", "America/Lima", "es-PE"),
    "pf": Country("French Polynesia", "Pacific/Tahiti", "fr-PF"),
    "pg": Country("Papua New Guinea", "Pacific/Port_Moresby", "tpi-PG"),
    "ph": Country("Philippines", "Asia/Manila", "fil-PH"),
    "pk": Country("Pakistan", "Asia/Karachi", "ur-PK"),
    "pl": Country("Poland", "Europe/Warsaw", "pl-PL"),
    "pm": Country("St. Pierre & Miquelon", "America/Miquelon", "fr-PM"),
    "pn": Country("Pitcairn Islands", "Pacific/Pitcairn", "en-PN"),
    "pr": Country("Puerto Rico", "America/Puerto_Rico", "es-PR"),
    "ps": Country("Palestinian Territories", "Asia/Gaza", "ar-PS"),
    "pt": Country("Portugal", "Europe/Lisbon", "pt-PT"),
    "pw": Country("Palau", "Pacific/Palau", "pau-PW"),
    "py": Country("Paraguay", "America/Asuncion", "gn-PY"),
    "qa": Country("Qatar", "Asia/Qatar", "ar-QA"),
    "re": Country("Réunion", "Indian/Reunion", "fr-RE"),
    "ro": Country("Romania", "Europe/Bucharest", "ro-RO"),
    "rs": Country("Serbia", "Europe/Belgrade", "sr-RS"),
    "ru": Country("Russia", "Europe/Moscow", "ru-RU"),
    "rw": Country("Rwanda", "Africa/Kigali", "rw-RW"),
    "sa": Country("Saudi Arabia", "Asia/Riyadh", "ar-SA"),
    "sb": Country("Solomon Islands", "Pacific/Guadalcanal", "en-SB"),
    "sc": Country("Seychelles", "Indian/Mahe", "fr-SC"),
    "sd": Country("Sudan", "Africa/Khartoum", "ar-SD"),
    "se": Country("Sweden", "Europe/Stockholm", "sv-SE"),
    "sg": Country("Singapore", "Asia/Singapore", "en-SG"),
    "sh": Country("St. Helena, Ascension & Tristan da Cunha", "Atlantic/St_Helena", "en-SH"),
    "si": Country("Slovenia", "Europe/Ljubljana", "sl-SI"),
    "sj": Country("Svalbard & Jan Mayen", "Arctic/Longyearbyen", "nb-SJ"),
    "sk": Country("Slovakia", "Europe/Bratislava", "sk-SK"),
    "sl": Country("Sierra Leone", "Africa/Freetown", "en-SL"),
    "sm": Country("San Marino", "Europe/San_Marino", "it-SM"),
    "sn": Country("Senegal", "Africa/Dakar", "wo-SN"),
    "so": Country("Somalia", "Africa/Mogadishu", "so-SO"),
    "sr": Country("Suriname", "America/Paramaribo", "nl-SR"),
    "ss": Country("South Sudan", "Africa/Juba", "ar-SS"),
    "st": Country("São Tomé & Príncipe", "Africa/Sao_Tome", "pt-ST"),
    "sv": Country("El Salvador", "America/El_Salvador", "es-SV"),
    "sx": Country("Sint Maarten", "America/Lower_Princes", "en-SX"),
    "sy": Country("Syria", "Asia/Damascus", "ar-SY"),
    "sz": Country("Eswatini", "Africa/Mbabane", "en-SZ"),
    "tc": Country("Turks & Caicos Islands", "America/Grand_Turk", "en-TC"),
    "td": Country("Chad", "Africa/Ndjamena", "ar-TD"),
    "tf": Country("French Southern and Antarctic Lands", "Indian/Kerguelen", "fr-TF"),
    "tg": Country("Togo", "Africa/Lome", "fr-TG"),
    "th": Country("Thailand", "Asia/Bangkok", "th-TH"),
    "tj": Country("Tajikistan", "Asia/Dushanbe", "tg-TJ"),
    "tk": Country("Tokelau", "Pacific/Fakaofo", "tkl-TK"),
    "tl": Country("Timor-Leste", "Asia/Dili", "pt-TL"),
    "tm": Country("Turkmenistan", "Asia/Ashgabat", "tk-TM"),
    "tn": Country("Tunisia", "Africa/Tunis", "ar-TN"),
    "to": Country("Tonga", "Pacific/Tongatapu", "to-TO"),
    "tr": Country("Türkiye", "Europe/Istanbul", "tr-TR"),
    "tt": Country("Trinidad & Tobago", "America/Port_of_Spain", "en-TT"),
    "tv": Country("Tuvalu", "Pacific/Funafuti", "tvl-TV"),
    "tw": Country("Taiwan", "Asia/Taipei", "zh-TW"),
    "tz": Country("Tanzania", "Africa/Dar_es_Salaam", "sw-TZ"),
    "ua": Country("Ukraine", "Europe/Kyiv", "uk-UA"),
    "ug": Country("Uganda", "Africa/Kampala", "sw-UG"),
    "um": Country("U.S. Outlying Islands", "Pacific/Midway", "en-UM"),
    "us": Country("United States", "America/New_York", "en-US"),
    "uy": Country("Uruguay", "America/Montevideo", "es-UY"),
    "uz": Country("Uzbekistan", "Asia/Tashkent", "uz-UZ"),
    "va": Country("Vatican City", "Europe/Vatican", "it-VA"),
    "vc": Country("St. Vincent & Grenadines", "America/St_Vincent", "en-VC"),
    "ve": Country("Venezuela", "America/Caracas", "es-VE"),
    "vg": Country("British Virgin Islands", "America/Tortola", "en-VG"),
    "vi": Country("U.S. Virgin Islands", "America/St_Thomas", "en-VI"),
    "vn": Country("Vietnam", "Asia/Ho_Chi_Minh", "vi-VN"),
    "vu": Country("Vanuatu", "Pacific/Efate", "bi-VU"),
    "wf": Country("Wallis & Futuna", "Pacific/Wallis", "fr-WF"),
    "ws": Country("Samoa", "Pacific/Apia", "sm-WS"),
    "ye": Country("Yemen", "Asia/Aden", "ar-YE"),
    "yt": Country("Mayotte", "Indian/Mayotte", "fr-YT"),
    "za": Country("South Africa", "Africa/Johannesburg", "en-ZA"),
    "zm": Country("Zambia", "Africa/Lusaka", "en-ZM"),
    "zw": Country("Zimbabwe", "Africa/Harare", "sn-ZW"),
}

# the first word of an operator's proxy entry, when it is a country's tag
_TAG_SEPARATOR = "="
MAX_LANGUAGES = 10
# ``(?![\s\S])`` ends the string in ECMA and Python regexes alike (Python's ``$`` also matches
# before a final newline), so that the documented pattern is the one checked
LANGUAGE_PATTERN = r"^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8})*(?![\s\S])"


def split_tag(entry: str) -> tuple[str | None, str]:
    """An operator's proxy entry as (its country, its URL): ``de=http://h:1`` is ("de",
    "http://h:1"), an untagged entry (None, itself). A tag that is no ISO 3166-1 alpha-2 code
    raises ValueError, which names the tag only (the URL may hold a password)."""
    text = entry.strip()
    tag, separator, url = text.partition(_TAG_SEPARATOR)
    if not separator or "/" in tag or ":" in tag or "@" in tag:
        return None, text
    country = tag.strip().lower()
    if country not in COUNTRIES:
        raise ValueError(f"{tag.strip()!r} is not an ISO 3166-1 alpha-2 country code")
    return country, url.strip()


def countries_of(entries: Iterable[str]) -> tuple[str, ...]:
    """The countries the proxies of ``entries`` are tagged with, sorted."""
    return tuple(sorted({c for c, _ in map(split_tag, entries) if c is not None}))


def languages_for(country: str | None, languages: Sequence[str]) -> tuple[str, ...]:
    """The languages a visitor asks for: the caller's, else the country's (none without)."""
    if languages:
        return tuple(languages)
    return (COUNTRIES[country].language,) if country is not None else ()


def accept_language(languages: Sequence[str]) -> str:
    """``Accept-Language`` for ``languages`` in order of preference, as a browser writes it:
    ``de-DE, en;q=0.9``."""
    weighted = [
        language if index == 0 else f"{language};q={max(1, 10 - index) / 10:g}"
        for index, language in enumerate(languages)
    ]
    return ", ".join(weighted)


def unavailable(country: str, tier: str, offered: Mapping[str, Sequence[str]]) -> str | None:
    """Why ``country`` cannot be had at ``tier`` (``none``, a proxy tier or ``auto``) with the
    countries ``offered`` per proxy tier; None when it can."""
    tiers = [t for t, countries in offered.items() if country in countries]
    if tier == "auto" and tiers:
        return None
    if tier in tiers:
        return None
    if tier == "none":
        if tiers:
            return (
                f"{country!r} needs a proxy: proxy_type none connects directly; use "
                f"{' or '.join(tiers)} (or auto)"
            )
        where = "any proxy tier"
    else:
        where = "any proxy tier" if tier == "auto" else f"the {tier} tier"
    scope = offered.items() if where == "any proxy tier" else [(tier, offered.get(tier, ()))]
    listed = "; ".join(f"{t}: {', '.join(c) or 'none'}" for t, c in scope)
    return f"no proxy in {country!r} in {where}; countries offered: {listed}"
