"""Ray's DAG API (ray.dag): calls bound into a graph now, run later.

    f.bind(...), Actor.bind(...), node.method.bind(...), handle.method.bind(...)
    with InputNode() as inp: ...;  MultiOutputNode([...]);  dag.execute(...)

A node is a call not made yet (a task, an actor's creation, a method call),
its arguments plain values or other nodes. `execute(*args, **kwargs)` makes
the calls, each node once, upstream first, a node's value (a ref, an actor
handle, the input) in place of the node where it is an argument, and
returns the root's: a ref, a handle, or (MultiOutputNode) a list of refs.
The InputNode stands for `execute`'s arguments (`inp[0]`, `inp["key"]`,
`inp.attr` for a part of them). An actor made by the graph is made anew at
each execution, its bound method calls made in the order they were bound;
one made with .remote() is the same in every execution. Nodes may sit in
lists, tuples and dicts among the arguments (not inside other objects)."""
import uuid

__all__ = ["DAGNode", "FunctionNode", "ClassNode", "ClassMethodNode", "InputNode",
           "InputAttributeNode", "DAGInputData", "MultiOutputNode"]

_PARENT = "parent_class_node"
_PREVIOUS = "prev_class_method_call"
_IN_CONTEXT = "__in_context_manager__"


def _nodes_in(value, found):
    """The DAG nodes in `value` (through lists, tuples, sets and dicts), in order."""
    if isinstance(value, DAGNode):
        if all(value is not n for n in found):
            found.append(value)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            _nodes_in(v, found)
    elif isinstance(value, dict):
        for k, v in value.items():
            _nodes_in(k, found)
            _nodes_in(v, found)
    return found


def _replaced(value, table):
    """`value` with each node in it replaced by table[id(node)]."""
    if isinstance(value, DAGNode):
        return table[id(value)]
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a namedtuple
        return type(value)(*(_replaced(v, table) for v in value))
    if isinstance(value, (list, tuple, set, frozenset)):
        return type(value)(_replaced(v, table) for v in value)
    if isinstance(value, dict):
        return {_replaced(k, table): _replaced(v, table) for k, v in value.items()}
    return value


class DAGNode:
    """A call not made yet: its arguments, options and what else it depends
    on (other_args_to_resolve: an actor's node, the method call bound before)."""

    def __init__(self, args, kwargs, options, other_args_to_resolve=None):
        self._bound_args = list(args or [])
        self._bound_kwargs = dict(kwargs or {})
        self._bound_options = dict(options or {})
        self._bound_other_args_to_resolve = dict(other_args_to_resolve or {})
        self._stable_uuid = uuid.uuid4().hex

    def get_args(self):
        return tuple(self._bound_args)

    def get_kwargs(self):
        return dict(self._bound_kwargs)

    def get_options(self):
        return dict(self._bound_options)

    def get_other_args_to_resolve(self):
        return dict(self._bound_other_args_to_resolve)

    def get_stable_uuid(self):
        return self._stable_uuid

    def _parts(self):
        return [self._bound_args, self._bound_kwargs, self._bound_other_args_to_resolve]

    def _get_all_child_nodes(self):
        return _nodes_in(self._parts(), [])

    def execute(self, *args, **kwargs):
        """Makes the graph's calls, each node once, and returns this node's
        value: a ref (a task's, a method's), an actor handle, the input, or a
        list of them (MultiOutputNode). `args`/`kwargs` are the InputNode's."""
        done = {}  # node's uuid -> its value, for this execution
        inputs = set()

        def run(node):
            if node._stable_uuid in done:
                return done[node._stable_uuid]
            if isinstance(node, InputNode):
                inputs.add(node._stable_uuid)
                if len(inputs) > 1:
                    raise AssertionError("Each DAG should only have one unique InputNode.")
            table = {id(child): run(child) for child in node._get_all_child_nodes()}
            bound = node._copy(*(_replaced(p, table) for p in node._parts()))
            value = bound._execute_impl(*args, **kwargs)
            done[node._stable_uuid] = value
            return value

        return run(self)

    def experimental_compile(self, *args, **kwargs):
        raise NotImplementedError(
            "DAGNode.experimental_compile: Ray's compiled graphs are not in atl: run the graph "
            "with execute() (its calls as tasks and actor calls)")

    def _copy(self, args, kwargs, other):
        """This node with its parts resolved (values in place of nodes)."""
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone._bound_args, clone._bound_kwargs = args, kwargs
        clone._bound_other_args_to_resolve = other
        return clone

    def _execute_impl(self, *args, **kwargs):
        raise NotImplementedError

    def __repr__(self):
        return f"({type(self).__name__}, {self._stable_uuid})"


class FunctionNode(DAGNode):
    """A remote function's call (f.bind(...))."""

    def __init__(self, remote_function, args, kwargs, options):
        self._body = remote_function
        super().__init__(args, kwargs, options)

    def _execute_impl(self, *args, **kwargs):
        fn = self._body.options(**self._bound_options) if self._bound_options else self._body
        return fn.remote(*self._bound_args, **self._bound_kwargs)


class ClassNode(DAGNode):
    """An actor's creation (Actor.bind(...)); its methods' .bind(...) are calls
    on it, made in the order they were bound."""

    def __init__(self, actor_class, args, kwargs, options):
        self._body = actor_class
        self._last_call = None
        super().__init__(args, kwargs, options)
        if any(isinstance(n, InputNode) or isinstance(n, InputAttributeNode)
               for n in self._all_upstream()):
            raise ValueError("InputNode handles user dynamic input the DAG, and cannot be used "
                             "as args, kwargs, or other_args_to_resolve in ClassNode "
                             "constructor because it is not available at class construction "
                             "or binding time.")

    def _all_upstream(self):
        seen, todo = [], self._get_all_child_nodes()
        while todo:
            n = todo.pop()
            if all(n is not s for s in seen):
                seen.append(n)
                todo.extend(n._get_all_child_nodes())
        return seen

    def _execute_impl(self, *args, **kwargs):
        cls = self._body.options(**self._bound_options) if self._bound_options else self._body
        return cls.remote(*self._bound_args, **self._bound_kwargs)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if name == "bind":
            raise AttributeError(f".bind() cannot be used again on {type(self)} ")
        getattr(self.__dict__["_body"]._cls, name)  # an AttributeError names a missing method
        return _UnboundClassMethodNode(self, name, {})


class _UnboundClassMethodNode:
    """`node.method` of an actor's node: .bind(...) makes the call's node."""

    def __init__(self, actor, method_name, options):
        self._actor = actor
        self._method_name = method_name
        self._options = options

    def bind(self, *args, **kwargs):
        node = ClassMethodNode(self._method_name, args, kwargs, self._options,
                               {_PARENT: self._actor, _PREVIOUS: self._actor._last_call})
        self._actor._last_call = node
        return node

    def options(self, **options):
        self._options = options
        return self

    def __getattr__(self, name):
        if name == "remote":
            raise AttributeError(".remote() cannot be used on ClassMethodNodes. Use .bind() "
                                 "instead to express an symbolic actor call.")
        raise AttributeError(name)


class ClassMethodNode(DAGNode):
    """A method call on an actor: one the graph makes (its ClassNode) or one
    made with .remote() (handle.method.bind(...))."""

    def __init__(self, method_name, args, kwargs, options, other_args_to_resolve):
        self._method_name = method_name
        super().__init__(args, kwargs, options, other_args_to_resolve)

    def _execute_impl(self, *args, **kwargs):
        actor = self._bound_other_args_to_resolve[_PARENT]
        method = getattr(actor, self._method_name)
        if self._bound_options:
            method = method.options(**self._bound_options)
        return method.remote(*self._bound_args, **self._bound_kwargs)


class InputNode(DAGNode):
    """What `execute` is given: the one value if one argument, else all of
    them (inp[i], inp["key"]); used inside `with InputNode() as inp:`."""

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise ValueError("InputNode should not take any args or kwargs.")
        self.__dict__["input_attribute_nodes"] = {}
        super().__init__([], {}, {})

    def _execute_impl(self, *args, **kwargs):
        assert self._bound_other_args_to_resolve.get(_IN_CONTEXT), (
            "InputNode is a singleton instance that should be only used in context manager "
            "for dag building and execution. See the docstring of class InputNode for "
            "examples.")
        if len(args) == 1 and not kwargs:
            return args[0]
        return DAGInputData(*args, **kwargs)

    def __enter__(self):
        self._bound_other_args_to_resolve[_IN_CONTEXT] = True
        return self

    def __exit__(self, *exc):
        return None

    def __getattr__(self, key):
        if key.startswith("_") or key in ("input_attribute_nodes",):
            raise AttributeError(key)
        return self._attribute(key, "__getattr__")

    def __getitem__(self, key):
        assert isinstance(key, (str, int)), (
            "Please only use int index or str as first-level key to access fields of dag input.")
        return self._attribute(key, "__getitem__")

    def _attribute(self, key, accessor):
        nodes = self.__dict__["input_attribute_nodes"]
        if key not in nodes:
            nodes[key] = InputAttributeNode(self, key, accessor)
        return nodes[key]


class InputAttributeNode(DAGNode):
    """A part of the input: inp[0], inp["key"], inp.attr."""

    def __init__(self, dag_input_node, key, accessor_method):
        self._key = key
        self._accessor_method = accessor_method
        super().__init__([], {}, {}, {"dag_input_node": dag_input_node})

    @property
    def key(self):
        return self._key

    def _execute_impl(self, *args, **kwargs):
        value = self._bound_other_args_to_resolve["dag_input_node"]
        if isinstance(value, DAGInputData):
            return value[self._key]
        if isinstance(self._key, str) and self._accessor_method == "__getattr__":
            return getattr(value, self._key)
        return value[self._key]


class DAGInputData:
    """Several inputs: by position (int) and by keyword (str)."""

    def __init__(self, *args, **kwargs):
        self._args = list(args)
        self._kwargs = kwargs

    def __getitem__(self, key):
        if isinstance(key, int):
            return self._args[key]
        if isinstance(key, str):
            return self._kwargs[key]
        raise ValueError("Please only use int index or str as first-level key to access fields "
                         "of dag input.")


class MultiOutputNode(DAGNode):
    """Several nodes' values as one list (execute returns a list of refs)."""

    def __init__(self, args, other_args_to_resolve=None):
        if isinstance(args, tuple):
            args = list(args)
        if not isinstance(args, list):
            raise ValueError(f"Invalid input type for `args`, {type(args)}.")
        super().__init__(args, {}, {}, other_args_to_resolve)

    def _execute_impl(self, *args, **kwargs):
        return list(self._bound_args)
