"""Renderers: the IR of one kernel variant as source text for a target.

* :mod:`.base` -- the C-family printer (expressions, statements, Python-semantics helpers) that C,
  CUDA and HIP share;
* :mod:`.c` -- C for the CPU (OpenMP over blocks, loop fission over the threads of a block);
* :mod:`.cuda` -- CUDA C for NVRTC; :mod:`.hip` -- its HIP variant;
* :mod:`.wgsl` -- WGSL for WebGPU.

A new target subclasses :class:`.base.CFamily` (or writes its own printer, as WGSL does) and adds
a runtime in :mod:`ember.cube.runtime`.
"""
