"""The planning agent: plan with a model, validate, approve, execute, revise."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Collection, Iterable
from typing import Any, Literal

from waygraph.errors import (
    AgentBusyError,
    ConfigError,
    Conflict,
    InvalidPlanError,
    LLMError,
    PlanningError,
    PlanRejectedError,
    WaygraphError,
)
from waygraph.planning._approval import ConsoleApproval, approve
from waygraph.planning._editing import offer_to_hook
from waygraph.planning._executor import PlanRun
from waygraph.planning._journal import Journal, load_run, new_run_id, restore
from waygraph.planning._lease import lost_race, may_resume
from waygraph.planning._llm import LLM, close_clients, planning_llm_for
from waygraph.planning._models import (
    Plan,
    PlanExecutionResult,
    PlanExecutionState,
    RevisionStrategy,
    RevisionTrigger,
)
from waygraph.planning._not_run import dry_run, not_run
from waygraph.planning._pattern import PlanningPattern
from waygraph.planning._planner import PlanGenerator
from waygraph.planning._revising import RevisionRequest
from waygraph.planning._runtime import Hook, Meter, RunCallbacks, RunSetup
from waygraph.planning._tools import Tool, ToolRegistry
from waygraph.store import Store, default_store_url, open_store

__all__ = ["PlanningAgent"]

log = logging.getLogger("waygraph.planning")


class PlanningAgent:
    """Asks a model for a plan, validates it, has it approved, and runs it itself.

    ``llm`` is the execution model (tools reach it through ``StepContext``;
    it also judges outputs when ``check_expected_output`` is on);
    ``planning_llm`` (default: ``llm``, or with the pattern's ``planning_model``
    that model on ``llm``'s endpoint) writes, repairs and revises plans.
    ``tools`` are functions or :class:`Tool` objects; ``side_effect_tools``
    names tools whose identical calls must all run.

    Callbacks may be sync or async. Each gets the arguments its signature
    asks for: the Planning pattern document's positional ones (written as the
    document writes them, ``on_step_complete(self, step, result)``, they
    work unchanged) and, by name or through ``**kwargs``, the others below:

    - ``on_plan_generated(plan, goal)``: may change the plan in place (its
      ``steps`` is a list, as the document's dataclass has it) or return
      another; a changed plan is validated again, and an invalid one is not
      run (an :class:`InvalidPlanError` whose first problem names the callback);
    - ``on_plan_approved(plan, goal)``: return False (or raise
      :class:`PlanRejectedError`) to reject, a plan to run an edited one;
      with ``require_plan_approval`` and no callback, :class:`ConsoleApproval`
      asks at the console;
    - ``on_step_start(step, state, depth)``, ``on_step_complete(step, result,
      state, depth)``: observe (their errors are logged, never raised);
    - ``on_revision_needed(trigger, reason, step_id, strategy, state, depth)``:
      may return a :class:`RevisionDecision` (or a strategy) to override the
      configured strategy; required for ``ask_user``;
    - ``on_plan_revised(revision, state, depth)``: observe a revision once it
      was applied or failed (``revision.applied``, ``revision.new_plan``);
    - ``on_plan_rejected(problems, attempt, attempts)``: observe each plan the
      model wrote that failed validation and was sent back (or, at the last
      attempt, given up on), as it happens.

    ``store`` (a store URL or a :class:`~waygraph.store.Store`; default: the
    Navigator's, :func:`~waygraph.store.default_store_url`) keeps every run:
    each step's result is committed as it finishes, so after a crash
    ``await agent.resume(run_id)`` continues the run without calling again
    any step whose result was committed. ``store="memory://"`` keeps runs in
    this process only; ``store=False`` keeps them nowhere (no record, no
    resume, no cost per step: for tests and latency-bound embeddings). The
    run's id is ``result.run_id`` (and :attr:`run_id` while it runs).

    Example:
        >>> from waygraph.planning import OpenAILLM
        >>> from waygraph.testing import ScriptedChatServer
        >>> def add(a: int, b: int) -> int:
        ...     return a + b
        >>> plan_json = ('{"goal": "add", "steps": [{"id": "s1", "action": "add",'
        ...              ' "parameters": {"a": 2, "b": 3}, "dependencies": []}]}')
        >>> with ScriptedChatServer([plan_json]) as server:
        ...     llm = OpenAILLM("scripted", base_url=server.base_url, api_key="test")
        ...     result = PlanningAgent(llm, tools=[add]).run("add 2 and 3")
        >>> result.success, result.final_output
        (True, 5)
    """

    def __init__(
        self,
        llm: LLM,
        tools: Iterable[Callable[..., Any] | Tool] = (),
        *,
        pattern: PlanningPattern | None = None,
        planning_llm: LLM | None = None,
        side_effect_tools: Collection[str] = (),
        on_plan_generated: Hook | None = None,
        on_plan_approved: Hook | None = None,
        on_step_start: Hook | None = None,
        on_step_complete: Hook | None = None,
        on_revision_needed: Hook | None = None,
        on_plan_revised: Hook | None = None,
        store: str | Store | Literal[False] | None = None,
        on_plan_rejected: Hook | None = None,
    ) -> None:
        self.llm = llm
        self._store_source = store
        self._store: Store | None = store if isinstance(store, Store) else None
        #: False when runs are kept nowhere (``store=False``): nothing to resume.
        self.keeps_runs = store is not False
        #: The id of the run going on, else of the last run (None before any).
        self.run_id: str | None = None
        self.pattern = pattern or PlanningPattern()
        if planning_llm is None and self.pattern.planning_model:
            planning_llm = planning_llm_for(llm, self.pattern.planning_model)
        self.planning_llm = planning_llm or llm
        self.tools = ToolRegistry(tools, side_effect_tools=side_effect_tools)
        if self.pattern.revision_strategy == RevisionStrategy.ASK_USER and not on_revision_needed:
            raise ConfigError(
                "revision_strategy 'ask_user' needs someone to ask: pass on_revision_needed "
                "(for example ConsoleApproval().on_revision_needed)"
            )
        if self.pattern.require_plan_approval and on_plan_approved is None:
            on_plan_approved = ConsoleApproval()
        self.hooks = RunCallbacks(
            on_plan_generated,
            on_plan_approved,
            on_step_start,
            on_step_complete,
            on_revision_needed,
            on_plan_revised,
            on_plan_rejected,
        )

        async def rejected(**values: Any) -> None:
            await self.hooks.notify("on_plan_rejected", **values)

        self._planner = PlanGenerator(
            self.planning_llm, self.tools, self.pattern, on_rejected=rejected
        )
        self._plan: Plan | None = None
        self._state: PlanExecutionState | None = None
        self._run: PlanRun | None = None
        self._busy = False

    # ------------------------------------------------------------ inspection

    @property
    def store(self) -> Store:
        """Where runs are kept (opened at first use, so building an agent writes nothing)."""
        if self._store is None:
            source = self._store_source
            if source is False:
                raise ConfigError("this agent keeps no runs (store=False): nothing to resume")
            self._store = open_store(source if isinstance(source, str) else default_store_url())
        return self._store

    def get_plan(self) -> Plan | None:
        """The current plan: the one running (with revisions applied), else the latest."""
        if self._run is not None:
            return self._run.plan
        return self._plan

    def get_execution_state(self) -> PlanExecutionState | None:
        """A snapshot of the running (or last) execution; None before any."""
        if self._run is not None:
            return self._run.snapshot()
        return self._state

    # ------------------------------------------------------------ planning

    async def generate_plan(self, goal: str, *, context: str | None = None) -> Plan:
        """Ask the planning model for a valid plan for ``goal``.

        Invalid plans are sent back with their problems (``plan_repair_attempts``
        times); ``on_plan_generated`` may then modify the plan. Raises
        :class:`InvalidPlanError` when no valid plan came back,
        :class:`LLMError` when the model cannot be reached, and
        :class:`PlanRejectedError` when ``on_plan_generated`` raised.
        """
        return await self._generate(goal, context, Meter())

    async def _generate(self, goal: str, context: str | None, meter: Meter) -> Plan:
        plan = self._plan = await self._planner.generate(goal, context, meter)
        hook = self.hooks.on_plan_generated
        if hook is not None:
            plan = self._plan = await offer_to_hook(hook, self._planner, plan, goal, meter)
        return plan

    async def revise_plan(self, feedback: str, *, plan: Plan | None = None) -> Plan:
        """Ask the planning model to revise ``plan`` (default: the current one) given
        ``feedback``; returns the validated new plan, to run with :meth:`execute_plan`.

        During a run use :meth:`request_revision` instead.
        """
        if self._run is not None:
            raise AgentBusyError("a plan is running; use request_revision(reason) to revise it")
        plan = plan or self._plan
        if plan is None:
            raise PlanningError("there is no plan to revise; generate_plan(goal) first")
        self._plan = await self._planner.revise(plan, feedback, Meter())
        return self._plan

    def request_revision(
        self, reason: str, *, strategy: RevisionStrategy | str | None = None
    ) -> bool:
        """Ask the running plan to be revised (a user request); False when nothing runs.

        Applied once the steps running now finish; allowed even with
        ``allow_revision=False``, within ``max_revisions``. Call it from the
        event loop's thread (a callback or a task).
        """
        if self._run is None:
            return False
        chosen = RevisionStrategy(strategy) if strategy is not None else None
        request = RevisionRequest(RevisionTrigger.USER_REQUEST, reason, strategy=chosen)
        self._run.request_revision(request)
        return True

    # ------------------------------------------------------------ execution

    async def execute(
        self, goal: str, *, context: str | None = None, run_id: str | None = None
    ) -> PlanExecutionResult:
        """Plan, approve and run ``goal``; always returns a result (never raises for
        invalid or rejected plans: ``success`` is False and ``final_output`` says why).

        ``run_id`` is the id the run is stored under (default: a new one), to
        tell people how to resume before the run starts.
        """
        self._enter()
        clock, meter = time.perf_counter(), Meter()
        try:
            try:
                plan = await self._generate(goal, context, meter)
            except InvalidPlanError as exc:
                return self._not_run(exc.plan, str(exc), meter, clock, exc.problems, goal=goal)
            except PlanRejectedError as exc:
                return self._not_run(self._plan, str(exc), meter, clock, goal=goal)
            except LLMError as exc:
                return self._not_run(None, f"planning failed: {exc}", meter, clock, goal=goal)
            except Exception as exc:
                # A custom LLM's own error: the host agent gets a result, not a crash.
                log.exception("planning failed")
                return self._not_run(None, f"planning failed: {exc!r}", meter, clock, goal=goal)
            if self.pattern.dry_run:
                # Nothing will run, so there is nothing to approve: report and stop.
                return await self._execute(plan, goal, meter, clock)
            verdict = await approve(self.hooks.on_plan_approved, plan, goal)
            if isinstance(verdict, str):
                return self._not_run(plan, verdict, meter, clock)
            return await self._execute(verdict, goal, meter, clock, run_id)
        finally:
            self._busy = False

    async def execute_plan(
        self, plan: Plan, *, goal: str | None = None, run_id: str | None = None
    ) -> PlanExecutionResult:
        """Validate and run a plan you already have (approval callbacks are not asked:
        passing the plan approves it). An invalid plan is not run at all.
        """
        self._enter()
        try:
            return await self._execute(
                plan, goal or plan.goal, Meter(), time.perf_counter(), run_id
            )
        finally:
            self._busy = False

    def run(self, goal: str, *, context: str | None = None) -> PlanExecutionResult:
        """Blocking :meth:`execute` for code without an event loop."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self._execute_and_release(goal, context))
        raise PlanningError(
            "run() cannot be called inside a running event loop; use `await agent.execute(goal)`"
        )

    async def _execute_and_release(self, goal: str, context: str | None) -> PlanExecutionResult:
        try:
            return await self.execute(goal, context=context)
        finally:
            # The event loop ends with this call: release the HTTP clients bound to it.
            await close_clients(self.llm, self.planning_llm)

    def _enter(self) -> None:
        if self._busy:
            raise AgentBusyError(
                "this agent is already running a plan; create one PlanningAgent per concurrent run"
            )
        self._busy = True

    async def _execute(
        self, plan: Plan, goal: str, meter: Meter, clock: float, run_id: str | None = None
    ) -> PlanExecutionResult:
        plan = self._planner.normalize(plan)
        self._plan = plan
        problems = self._planner.validate(plan, meter)
        if self.pattern.dry_run:
            # Every way into a run passes here, so a dry run never starts a step.
            return dry_run(plan, goal, self.pattern, self.tools, meter, clock, problems)
        if problems:
            return self._not_run(plan, str(InvalidPlanError(problems)), meter, clock, problems)
        if not self.keeps_runs:
            return await self._drive(self._new_run(plan, goal, meter), meter, clock)
        journal = Journal(self.store, run_id or new_run_id())
        run = self._new_run(plan, goal, meter, journal)
        try:
            await journal.begin(run)
        except (WaygraphError, OSError) as exc:
            # Nothing has run: say so rather than run steps no one could resume.
            return self._not_run(plan, f"the run could not be saved: {exc}", meter, clock)
        return await self._drive(run, meter, clock)

    def _setup(self, meter: Meter) -> RunSetup:
        return RunSetup(self._planner, self.llm, self.hooks, meter, calls={})

    def _new_run(
        self, plan: Plan, goal: str, meter: Meter, journal: Journal | None = None
    ) -> PlanRun:
        return PlanRun.of(plan, goal, self._setup(meter), journal=journal)

    async def _drive(self, run: PlanRun, meter: Meter, clock: float) -> PlanExecutionResult:
        """Run ``run`` to its end, committing it through its journal (None: kept nowhere)."""
        journal = run.journal
        self._run = run
        self.run_id = journal.run_id if journal is not None else None
        try:
            result = await run.run()
        except BaseException:
            # Cancelled (Ctrl-C) or a bug: keep what finished; the run stays resumable.
            if journal is not None:
                await journal.flush()
            raise
        finally:
            self._run = None
            self._state = run.snapshot()
            self._plan = run.plan
        if journal is not None:
            await journal.close(
                success=result.success, final_output=result.final_output, reason=run.stop_reason
            )
            if journal.error is not None:
                # Results of this process never reached the store (another
                # process took the run over, the store failed): it must not
                # report a success; the stored run says what was saved.
                why = f"the run could not be saved to {self.store.url}: {journal.error}"
                result = result.model_copy(update={"success": False, "final_output": why})
        return result.model_copy(
            update={
                "execution_time": time.perf_counter() - clock,
                "token_usage": meter.total,
                "run_id": self.run_id,
            }
        )

    async def resume(self, run_id: str, *, takeover: bool = False) -> PlanExecutionResult:
        """Continue the stored run ``run_id`` (after a crash, a kill, Ctrl-C).

        Steps whose result was committed are not called again; steps that
        were running when the process stopped are marked interrupted and run
        again, as do the steps not reached yet. A run another process holds
        (its lease is live: see docs/planning.md) raises
        :class:`~waygraph.errors.PlanningError` before anything is called,
        naming the holder and until when; ``takeover=True`` takes it at once
        (for a holder known to be gone). The agent needs the tools the run uses; its pattern
        (modes, limits, revision settings) applies from now on. A run that
        already ended is not run again: its stored result comes back.
        Raises :class:`~waygraph.errors.RunNotFoundError` for an unknown id.

        Example:
            >>> import asyncio
            >>> from waygraph.planning import Plan
            >>> def count(text: str) -> int:
            ...     return len(text)
            >>> agent = PlanningAgent(None, tools=[count], store="memory://")
            >>> first = asyncio.run(agent.execute_plan(
            ...     Plan(goal="count", steps=[{"id": "n", "action": "count",
            ...                                 "parameters": {"text": "abc"}}])))
            >>> again = asyncio.run(agent.resume(first.run_id))
            >>> again.success, again.final_output, again.run_id == first.run_id
            (True, 3, True)
        """
        self._enter()
        clock, meter = time.perf_counter(), Meter()
        try:
            saved = load_run(self.store, run_id)
            interrupted = saved.interrupted()
            state, failed = restore(saved)
            if saved.ended:
                # Nothing to do and nothing to write: rebuild the stored result.
                run = PlanRun(state, self._setup(meter))
                result = await run.run()
                self._state, self._plan, self.run_id = run.snapshot(), run.plan, run_id
                return result.model_copy(update={"run_id": run_id})
            may_resume(run_id, saved.lease, takeover=takeover)
            journal = Journal(self.store, run_id, session=saved.session, version=saved.version)
            run = PlanRun(state, self._setup(meter), journal=journal)
            rerun = [sid for sid, status in run.status.items() if status == "pending"]
            try:
                await journal.begin(
                    run, resumed=True, rerun=rerun, interrupted=interrupted, previous=saved.lease
                )
            except Conflict:
                # Lost the race for the lease: name the winner when its lease is there.
                raise lost_race(run_id, load_run(self.store, run_id).lease) from None
            run.handle_lost_failures(failed)
            return await self._drive(run, meter, clock)
        finally:
            self._busy = False

    def _not_run(
        self,
        plan: Plan | None,
        why: str,
        meter: Meter,
        clock: float,
        problems: Iterable[Any] = (),
        *,
        goal: str | None = None,
    ) -> PlanExecutionResult:
        return not_run(plan, why, self.pattern, self.tools, meter, clock, problems, goal=goal)
