"""The render pipeline: from a loaded control plane to a GitOps tree (a mapping path → bytes).

Scheduling (``scheduling``), config composition with provenance (``composition``), JSON Schema validation
(``validation``), sandboxed Jinja2 templates (``templates``) and their YAML emitter (``yamlemit``), the pipeline
that ties them (``pipeline``), ``explain`` and ``diff``; everything incremental rendering needs, in one module
(``incremental``: the state file, fingerprints, what a change touches); and the one writer of an output folder
(``output``). Pure apart from ``output``, which writes only below the folder it is given. It may import
``fleetflow.model`` and ``fleetflow.errors``; never ``forge``, ``promotion``, ``cli``, git or the network
(``tests/test_layering.py``).
"""
