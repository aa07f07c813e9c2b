"""Delivery history and what it tells, pure: the promotion records (``records``), the delivery metrics computed
from them (``metrics``: lead time, deployment frequency, change failure rate, time to restore) and the layout of
the environment chain as a graph (``chain``).

Plain data in, plain data out: no git, no forge, no clock (the caller passes "now"), no files. ``promotion``
reads the records from git and the forge (:mod:`fleetflow.promotion.history`); ``cli`` and ``report`` show them.
This folder may import pydantic, the standard library and ``fleetflow.errors`` only.
"""
