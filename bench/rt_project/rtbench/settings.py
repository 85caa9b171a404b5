"""ScrapyRT's project for the benchmark: the same extraction, Scrapy's defaults otherwise."""

BOT_NAME = "rtbench"
SPIDER_MODULES = ["rtbench.spiders"]
ROBOTSTXT_OBEY = True
LOG_LEVEL = "WARNING"
TELNETCONSOLE_ENABLED = False
REMOTE_CONTROL_ENABLED = False
RETRY_ENABLED = False
TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
