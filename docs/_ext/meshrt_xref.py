"""Resolve short Python names in docstrings (``Sharding``, ``ReshardPlan``, ``DistributedTensor.reshard``)
to the one documented meshrt object they name.

Docstrings say ``ReshardPlan`` or ``DistributedTensor.update_halo``, as a reader would; Sphinx
looks such a name up only in the current module (``meshrt.io.DistributedTensor.update_halo``
does not exist) and, with ``nitpicky``, warns. This handler of ``missing-reference`` tries
``meshrt.<name>``, then the documented objects whose full name ends in ``.<name>``; a name that
matches none, or several different objects, stays a warning.
"""

from sphinx.util.nodes import make_refnode


def _unique_target(objects, target):
    exact = objects.get(f"meshrt.{target}")
    if exact is not None:
        return f"meshrt.{target}", exact
    found = {}
    for name, entry in objects.items():
        if name.endswith(f".{target}") and name.startswith("meshrt.") and not entry.aliased:
            found[(entry.docname, entry.node_id)] = (name, entry)
    return next(iter(found.values())) if len(found) == 1 else (None, None)


def resolve_short_name(app, env, node, contnode):
    if node.get("refdomain") != "py" or not node.get("reftarget"):
        return None
    target = node["reftarget"].lstrip("~.")
    if target.startswith("meshrt."):
        return None  # a full name that does not exist: a real error
    name, entry = _unique_target(env.get_domain("py").objects, target)
    if entry is None:
        return None
    return make_refnode(app.builder, node["refdoc"], entry.docname, entry.node_id, contnode, name)


def setup(app):
    app.connect("missing-reference", resolve_short_name)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
