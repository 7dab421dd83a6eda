# SPDX-License-Identifier: Apache-2.0
"""Scraping the metrics exporter over HTTP in tests: the samples of one scrape, looked up by name and labels."""
from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families


class Scrape:
    """The samples of one ``GET /metrics``."""

    def __init__(self, port: int) -> None:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            assert response.status == 200
            self.text = response.read().decode()
        self.samples = [s for family in text_string_to_metric_families(self.text) for s in family.samples]

    def all(self, metric: str, **labels: str) -> list:
        return [s for s in self.samples if s.name == metric and all(s.labels.get(k) == v for k, v in labels.items())]

    def value(self, metric: str, **labels: str) -> float:
        (sample,) = self.all(metric, **labels)
        return sample.value
