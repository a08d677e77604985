"""Run rdma-core's tests/run_tests.py on efasim's drop-in libibverbs.

rdma-core's tests import pyverbs' mlx5 modules whatever the device (tests/utils.py
imports tests/mlx5_base.py). Those modules link Debian's libmlx5, which needs
libibverbs' private provider ABI (IBVERBS_PRIVATE_34): a drop-in libibverbs
cannot honestly offer it, so they cannot load. Each one that cannot is replaced
by a stand-in whose contexts refuse, as the real mlx5dv does on a device that is
not an mlx5 (PyverbsUserError); tests of other devices never reach them. Nothing
else changes: the suite then runs as given.

    python3 mlx5-standin.py tests/run_tests.py ARGS...
"""
import importlib
import os
import runpy
import sys
import types

import pyverbs.providers
from pyverbs.pyverbs_error import PyverbsUserError

MODULES = ['mlx5dv', 'mlx5_enums', 'mlx5_vfio', 'dr_action', 'dr_domain', 'dr_matcher',
           'dr_rule', 'dr_table', 'mlx5dv_crypto', 'mlx5dv_flow', 'mlx5dv_mkey',
           'mlx5dv_objects', 'mlx5dv_sched', 'mlx5dv_dmabuf', 'libmlx5']


class _Refused:
    """An mlx5 object: creating one fails as on a device that is not an mlx5."""

    def __init__(self, *args, **kwargs):
        raise PyverbsUserError('This is not an MLX5 device')


class _Inert:
    """An mlx5 attribute structure: made freely, as the real ones are (only a
    context or an object on one refuses)."""

    def __init__(self, *args, **kwargs):
        pass


class _StandIn(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith('__'):
            raise AttributeError(name)
        if name.isupper() or name.startswith('MLX5') or name.startswith('mlx5dv_'):
            return 0  # enum values and flags
        if name.endswith('Attr') or name.endswith('Attrs'):
            return type(name, (_Inert,), {})
        return type(name, (_Refused,), {})


def main():
    package = 'pyverbs.providers.mlx5'
    try:
        importlib.import_module(package)
    except ImportError:
        sys.modules[package] = _StandIn(package)
    for name in MODULES:
        full = package + '.' + name
        try:
            importlib.import_module(full)
        except ImportError:
            sys.modules[full] = _StandIn(full)
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(os.path.abspath(script))  # as python3 SCRIPT sets it
    runpy.run_path(script, run_name='__main__')


if __name__ == '__main__':
    main()
