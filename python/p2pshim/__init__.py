"""p2pshim: libp2pshim.so and its launcher, installed by pip.

The package holds the C launcher (bin/p2pshim) and the library
(lib/libp2pshim.so); the `p2pshim` command runs that launcher, which finds
the library beside it as in any installed prefix.
"""
import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def launcher_path():
    """The bundled C launcher."""
    return os.path.join(_HERE, "bin", "p2pshim")


def library_path():
    """The bundled libp2pshim.so (for LD_PRELOAD)."""
    return os.path.join(_HERE, "lib", "libp2pshim.so")
