"""Every hot loop, twice: ``<domain>_c`` (Cython) and ``<domain>_py`` (pure Python); ``_backend`` chooses."""
