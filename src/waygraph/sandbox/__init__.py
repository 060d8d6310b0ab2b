"""Work waygraph runs on the host, contained.

Every command goes through one runner (:mod:`~waygraph.sandbox.runner`), under
a wrapper that reaps what it leaves behind (``_reaper``) and, where the kernel
allows, Landlock confinement (:mod:`~waygraph.sandbox.landlock`); files a model
can write are read without following links or swallowing the disk
(:mod:`~waygraph.sandbox.safe_files`).
"""
