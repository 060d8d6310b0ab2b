"""The guided driver's parts below :class:`~waygraph.navigator.Navigator`.

A guided run is a plan from the library followed turn by turn while the model
does the work: :mod:`~waygraph.guided.turns` checks what a turn takes and
gives, :mod:`~waygraph.guided.sessions` keeps the sessions in a store,
:mod:`~waygraph.guided.versions` pins the exact plan a run follows,
:mod:`~waygraph.guided.live_library` reloads the library when its files change
and :mod:`~waygraph.guided.chaining` starts an exit node's ``next_plan``. The
rules themselves are pure, in :mod:`waygraph.engine`; the public entry points
are :class:`~waygraph.navigator.Navigator`,
:class:`~waygraph.async_navigator.AsyncNavigator` and
:class:`~waygraph.hooks.Hooks`.
"""
