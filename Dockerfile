# scrapespy: the API with Debian's Chromium (its headless shell) for the js engine, as a non-root
# user.
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    SCRAPESPY_DATABASE_URL=sqlite:////data/scrapespy.db \
    SCRAPESPY_CHROMIUM_PATH=/usr/bin/chromium-headless-shell

RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium-headless-shell \
    fonts-liberation \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml README.md scrapy.cfg ./
COPY service ./service
COPY spiders ./spiders
COPY middlewares ./middlewares
COPY pipelines ./pipelines
COPY twisted ./twisted
RUN pip install . && useradd --system --create-home --home-dir /home/scrapespy scrapespy \
 && mkdir -p /data && chown scrapespy:scrapespy /data

USER scrapespy
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD python -c "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=4).status == 200 else 1)"
CMD ["scrapespy", "serve", "--host", "0.0.0.0", "--port", "8080"]
