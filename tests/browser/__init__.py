"""Browser tests: the HTML report and serve pages in real Chromium."""
