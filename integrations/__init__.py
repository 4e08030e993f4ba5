"""Adapters to the tools where labels are made: Snorkel and Label Studio.

Importable as ``crowd_keras.integrations``; each adapter imports its tool lazily so the
library works without them installed.
"""
