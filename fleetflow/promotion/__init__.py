"""Promotion: the steps that move a main commit through the environment chain.

``promote`` (pin a commit on an environment once its upstreams rolled it out), ``schedule`` (render at the pin
and open / update the environment's one PR), ``check_rollout`` (the gate, then fan-out), ``status``, and the
pieces they share: the run's ``context``, the ``gate`` decision, the ``pin`` file, the PR body (``prbody``) and
what a GitHub event means (``events``). It may import ``model``, ``render``, ``forge`` and ``fleetflow.errors`` /
``fleetflow.settings``; never ``cli`` or ``demo``. It talks to GitHub only through the ``forge`` protocol.
"""
