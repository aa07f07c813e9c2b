"""The model: reading and checking a control plane.

Here live the YAML documents with a file:line:column for every key (``documents``), the resource kinds as pydantic
models (``resources``), the loaded control plane of one environment (``controlplane``), Kubernetes label selectors
(``selectors``), durations, and the cross-reference checks between resources (``references``). Everything here is
pure: plain data in, plain data or :class:`fleetflow.errors.Problem` out. It may import ``fleetflow.errors`` and
third-party parsing libraries only; never ``render``, ``forge``, ``promotion``, ``cli``, git or the network (a test
holds this: ``tests/test_layering.py``).
"""
