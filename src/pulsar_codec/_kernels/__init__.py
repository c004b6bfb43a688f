"""Every hot loop, twice: ``<domain>_c`` (Cython) and ``<domain>_py`` (pure Python); ``defs`` holds the
numbers both share (``defs.pxd`` is its Cython view over csrc/), ``_backend`` chooses between them."""
