"""The narrated demo: the whole promotion flow on local repos with the local forge and a simulated clock.

It may import everything except ``cli``; ``fleetflow.cli.demo`` is its thin command.
"""
