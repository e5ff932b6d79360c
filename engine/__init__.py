"""framesweep: paired item-level scaling audits of video LLMs."""

from engine.compat import install_import_hook as _install_import_hook

_install_import_hook()

__version__ = "0.1.0"
__all__ = ["__version__"]
