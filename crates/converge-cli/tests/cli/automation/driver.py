"""Drives `converge`, exposed as `pulumi` on PATH, with the published
Automation API of the `pulumi` package, unmodified: a local program and an
inline one, the way a platform team's code would.

Usage: driver.py local|inline|counts|transports|failure|policy|concurrent PROJECT_DIR

`policy` runs the pack in CONVERGE_TEST_POLICY_PACK (the strings pack of
`policy/strings_pack.py`) with `policy_packs=` and `policy_pack_configs=`.

The backend, passphrase and Converge home come from the environment
(PULUMI_BACKEND_URL, PULUMI_ACCESS_TOKEN, PULUMI_CONFIG_PASSPHRASE,
CONVERGE_HOME). Every check is an assertion; the last line printed is
`automation: ok`.
"""

import json
import os
import sys
import tempfile

import pulumi
import pulumi_random as random
from pulumi import automation as auto

MODE, PROJECT = sys.argv[1], sys.argv[2]
ENV = {
    k: os.environ[k]
    for k in (
        "PULUMI_BACKEND_URL",
        "PULUMI_ACCESS_TOKEN",
        "PULUMI_CONFIG_PASSPHRASE",
        "CONVERGE_HOME",
    )
    if k in os.environ
}
assert "PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK" not in os.environ


def opts(**kw):
    return auto.LocalWorkspaceOptions(env_vars=ENV, **kw)


def kinds(events):
    """Each event as (kind, op, urn), in the order received."""
    out = []
    for e in events:
        if e.prelude_event:
            out.append(("prelude", None, None))
        elif e.resource_pre_event:
            m = e.resource_pre_event.metadata
            out.append(("pre", m.op.value, m.urn))
        elif e.res_outputs_event:
            m = e.res_outputs_event.metadata
            out.append(("outputs", m.op.value, m.urn))
        elif e.res_op_failed_event:
            out.append(("failed", None, None))
        elif e.diagnostic_event:
            out.append(("diagnostic", e.diagnostic_event.severity, None))
        elif e.summary_event:
            out.append(("summary", None, None))
        elif e.cancel_event:
            out.append(("cancel", None, None))
        else:
            out.append(("other", None, None))
    return out


def local():
    cmd = auto.PulumiCommand()
    assert str(cmd.version).startswith("3."), cmd.version
    st = auto.create_or_select_stack("dev", work_dir=PROJECT, opts=opts(pulumi_command=cmd))
    # Selecting it again finds it.
    st = auto.select_stack("dev", work_dir=PROJECT, opts=opts(pulumi_command=cmd))

    st.set_config("length", auto.ConfigValue("12"))
    st.set_config("token", auto.ConfigValue("s3cr3t", secret=True))
    st.set_config("tags.env", auto.ConfigValue("prod"), path=True)
    st.set_config("tags.count", auto.ConfigValue("3"), path=True)
    st.set_all_config(
        {"a": auto.ConfigValue("1"), "b": auto.ConfigValue("two", secret=True)}
    )
    assert st.get_config("length").value == "12"
    token = st.get_config("token")
    assert token.value == "s3cr3t" and token.secret, token
    assert st.get_config("tags.env", path=True).value == "prod"
    everything = st.get_all_config()
    assert everything["autoproj:b"].value == "two" and everything["autoproj:b"].secret
    assert json.loads(everything["autoproj:tags"].value) == {"env": "prod", "count": 3}
    st.remove_config("a")
    assert "autoproj:a" not in st.get_all_config()

    events = []
    preview = st.preview(on_event=events.append)
    # The stack and the word: the default provider is not counted.
    assert preview.change_summary == {"create": 2}, preview.change_summary
    seen = kinds(events)
    assert seen[0][0] == "prelude" and seen[-1][0] == "cancel", seen
    assert any(k == ("pre", "create", k[2]) for k in seen), seen
    assert events[0].prelude_event.config["autoproj:token"] == "[secret]", events[0]

    events = []
    up = st.up(on_event=events.append)
    assert up.summary.result == "succeeded", up.summary
    assert up.summary.resource_changes == {"create": 2}, up.summary.resource_changes
    assert up.summary.environment.get("exec.kind") == "auto.local", up.summary.environment
    assert len(up.outputs["word"].value) == 12 and not up.outputs["word"].secret
    assert up.outputs["token"].value == "s3cr3t" and up.outputs["token"].secret
    assert up.outputs["env"].value == "prod"
    outputs_events = [e.res_outputs_event for e in events if e.res_outputs_event]
    assert any(
        e.metadata.type == "random:index/randomString:RandomString"
        and e.metadata.new.outputs.get("result") == up.outputs["word"].value
        for e in outputs_events
    ), outputs_events
    summary = [e.summary_event for e in events if e.summary_event]
    assert summary and summary[0].resource_changes == {"create": 2}, summary
    assert "token" in up.stdout or "Outputs" in up.stdout, up.stdout
    assert "s3cr3t" not in up.stdout

    outputs = st.outputs()
    assert outputs["word"].value == up.outputs["word"].value
    assert outputs["token"].secret and outputs["token"].value == "s3cr3t"

    noop = st.preview()
    assert noop.change_summary == {"same": 2}, noop.change_summary

    history = st.history()
    assert [h.kind for h in history] == ["update"], history
    assert history[0].config["autoproj:token"].secret
    assert st.history(page_size=1, page=2) == []

    refreshed = st.refresh()
    assert refreshed.summary.kind == "refresh" and refreshed.summary.result == "succeeded"
    # As Pulumi counts a refresh without drift: every resource but the
    # default provider, the stack included.
    assert refreshed.summary.resource_changes == {"same": 2}, refreshed.summary.resource_changes

    exported = st.export_stack()
    urns = [r["urn"] for r in exported.deployment["resources"]]
    assert any(u.endswith("::word") for u in urns), urns
    st.import_stack(exported)
    assert st.outputs()["word"].value == up.outputs["word"].value

    info = st.info()
    assert info.kind == "refresh", info
    who = st.workspace.who_am_i()
    assert who.user and who.url == ENV["PULUMI_BACKEND_URL"], (who.user, who.url)
    stacks = st.workspace.list_stacks()
    dev = [s for s in stacks if s.name == "dev"]
    assert dev and dev[0].current and dev[0].resource_count == 3, stacks
    assert st.workspace.stack().name == "dev"

    st.set_tag("team", "platform")
    assert st.get_tag("team") == "platform"
    assert st.list_tags()["team"] == "platform"
    st.remove_tag("team")
    assert "team" not in st.list_tags()
    imported = st.import_resources(
        resources=[
            {"type": "random:index/randomString:RandomString", "name": "adopted", "id": "adoptme"}
        ],
        protect=False,
        generate_code=False,
    )
    assert imported.summary.resource_changes.get("import") == 1, imported.summary
    # Nothing is running: cancel says so and succeeds.
    st.cancel()

    destroyed = st.destroy()
    assert destroyed.summary.resource_changes == {"delete": 3}, destroyed.summary.resource_changes
    st.workspace.remove_stack("dev")
    assert not [s for s in st.workspace.list_stacks() if s.name == "dev"]
    try:
        auto.select_stack("dev", work_dir=PROJECT, opts=opts())
        raise AssertionError("a removed stack was selected")
    except auto.StackNotFoundError:
        pass


def program():
    config = pulumi.Config()
    word = random.RandomString("word", length=8, special=False)
    pulumi.export("word", word.result)
    pulumi.export("greeting", config.get("greeting") or "hello")
    pulumi.export("hidden", pulumi.Output.secret("inline-secret"))


def inline():
    st = auto.create_or_select_stack(
        "inl", project_name="inlineproj", program=program, opts=opts(work_dir=PROJECT)
    )
    st.set_config("greeting", auto.ConfigValue("hi"))
    st.set_config("pw", auto.ConfigValue("hunter2", secret=True))
    events = []
    up = st.up(on_event=events.append)
    assert up.summary.resource_changes == {"create": 2}, up.summary.resource_changes
    assert up.summary.environment.get("exec.kind") == "auto.inline", up.summary.environment
    assert up.outputs["greeting"].value == "hi"
    assert up.outputs["hidden"].secret and up.outputs["hidden"].value == "inline-secret"
    assert len(up.outputs["word"].value) == 8
    assert any(e.res_outputs_event for e in events)
    # A fresh workspace (a new CI runner): refresh_config brings back the
    # last update's configuration, its secret readable with the key the
    # stack's state records.
    name = st.workspace.project_settings().name
    with tempfile.TemporaryDirectory() as fresh:
        again = auto.create_or_select_stack(
            "inl", project_name=name, program=program, opts=opts(work_dir=fresh)
        )
        again.refresh_config()
        config = again.get_all_config()
        assert config[f"{name}:pw"].value == "hunter2", config
        assert config[f"{name}:pw"].secret and config[f"{name}:greeting"].value == "hi"
    noop = st.preview()
    assert noop.change_summary == {"same": 2}, noop.change_summary
    refreshed = st.refresh()
    assert refreshed.summary.result == "succeeded"
    assert refreshed.summary.environment.get("exec.kind") == "auto.inline"
    destroyed = st.destroy()
    assert destroyed.summary.resource_changes == {"delete": 2}, destroyed.summary.resource_changes
    st.workspace.remove_stack("inl")


def sized():
    word = random.RandomString("word", length=pulumi.Config().require_int("length"), special=False)
    pulumi.export("word", word.result)


def counts():
    """Change summaries count what Pulumi counts (no default provider, a
    replacement once), and a step's pre-event carries its metadata."""
    st = auto.create_or_select_stack(
        "cnt", project_name="countproj", program=sized, opts=opts(work_dir=PROJECT)
    )
    st.set_config("length", auto.ConfigValue("8"))
    planned = st.preview()
    assert planned.change_summary == {"create": 2}, planned.change_summary
    up = st.up()
    assert up.summary.resource_changes == {"create": 2}, up.summary.resource_changes
    history = st.history()
    assert history[0].resource_changes == {"create": 2}, history[0]

    # `length` forces a replacement of the word.
    st.set_config("length", auto.ConfigValue("12"))
    planned = st.preview()
    assert planned.change_summary == {"replace": 1, "same": 1}, planned.change_summary
    events = []
    up = st.up(on_event=events.append)
    assert up.summary.resource_changes == {"replace": 1, "same": 1}, up.summary.resource_changes
    assert len(up.outputs["word"].value) == 12
    summary = [e.summary_event for e in events if e.summary_event]
    assert summary[0].resource_changes == {"replace": 1, "same": 1}, summary
    assert "+-1 replaced" in up.stdout and "1 unchanged" in up.stdout, up.stdout
    history = st.history()
    assert history[0].resource_changes == {"replace": 1, "same": 1}, history[0]

    pre = [
        e.resource_pre_event.metadata
        for e in events
        if e.resource_pre_event
        and e.resource_pre_event.metadata.op.value in ("replace", "create-replacement")
    ]
    assert {m.op.value for m in pre} == {"replace", "create-replacement"}, pre
    for m in pre:
        assert m.urn.endswith("::word"), m
        assert m.diffs == ["length"], m
        assert m.keys == ["length"], m
        assert m.detailed_diff["length"].diff_kind.value == "update-replace", m
        # `<provider URN>::<ID>`, the default provider's.
        provider_urn, provider_id = m.provider.rsplit("::", 1)
        assert provider_urn.startswith("urn:pulumi:cnt::"), m
        assert "::pulumi:providers:random::default" in provider_urn and provider_id, m
        assert m.old.provider == m.provider, m
        assert m.old.inputs["length"] == 8 and m.new.inputs["length"] == 12, m
        assert m.old.outputs["result"] != "", m
    st.destroy()
    st.workspace.remove_stack("cnt")


def transports():
    """The same preview through both event-log transports: the SDK's gRPC
    server (what it selects for this CLI version) and a file read back
    with the SDK's own event parser."""
    st = auto.create_or_select_stack("ev", work_dir=PROJECT, opts=opts())
    st.set_config("length", auto.ConfigValue("5"))
    st.set_config("token", auto.ConfigValue("t", secret=True))
    st.up()
    streamed = []
    st.preview(on_event=streamed.append)
    log = os.path.join(tempfile.mkdtemp(), "eventlog.txt")
    st._run_pulumi_cmd_sync(["preview", "--event-log", log])
    with open(log, encoding="utf-8") as f:
        lines = [line for line in f.read().split("\n") if line]
    from_file = [auto.events.EngineEvent.from_json(json.loads(line)) for line in lines]
    assert kinds(streamed) == kinds(from_file), (kinds(streamed), kinds(from_file))
    assert [e.sequence for e in from_file] == list(range(len(from_file)))
    assert [e.sequence for e in streamed] == list(range(len(streamed)))
    st.destroy()
    st.workspace.remove_stack("ev")


def custom_resources(st):
    return [r for r in st.export_stack().deployment["resources"] if r["custom"]]


def failure():
    """A program that raises: the SDK raises with its error, and the
    stack's resources stay as they were. (The stack resource's outputs
    become what the failed program registered, none, as with Pulumi: the
    SDK registers the stack's outputs even when the program raises.)"""
    st = auto.create_or_select_stack("bad", work_dir=PROJECT, opts=opts())
    st.set_config("length", auto.ConfigValue("6"))
    st.set_config("token", auto.ConfigValue("t", secret=True))
    st.up()
    before = custom_resources(st)
    assert len(before) == 2, before
    main = os.path.join(PROJECT, "__main__.py")
    with open(main, encoding="utf-8") as f:
        good = f.read()
    with open(main, "w", encoding="utf-8") as f:
        f.write("raise ValueError('the program refuses: boom-42')\n")
    try:
        st.up()
        raise AssertionError("a failing program's update succeeded")
    except auto.CommandError as e:
        assert "boom-42" in str(e), str(e)
    finally:
        with open(main, "w", encoding="utf-8") as f:
            f.write(good)
    after = custom_resources(st)
    assert before == after, (before, after)
    assert st.history()[0].result == "failed"

    def raising():
        raise RuntimeError("inline refuses: boom-43")

    try:
        st.up(program=raising)
        raise AssertionError("a failing inline program's update succeeded")
    except auto.CommandError as e:
        assert "boom-43" in str(e), str(e)
    assert custom_resources(st) == before

    # Inputs the provider's Check refuses: the cause reaches on_event as
    # an error diagnostic on the resource, not only the SDK's "Resource
    # monitor has terminated".
    def refused():
        random.RandomInteger("bad-range", min=10, max=1)

    events = []
    try:
        st.up(program=refused, on_event=events.append)
        raise AssertionError("an update with refused inputs succeeded")
    except auto.CommandError as e:
        assert "must be at most max" in str(e), str(e)
    causes = [
        e.diagnostic_event
        for e in events
        if e.diagnostic_event
        and e.diagnostic_event.severity == "error"
        and (e.diagnostic_event.urn or "").endswith("::bad-range")
    ]
    assert causes and "must be at most max" in causes[0].message, [
        e.diagnostic_event for e in events if e.diagnostic_event
    ]
    st.destroy()
    st.workspace.remove_stack("bad")


def strings(length):
    """An inline program: one random string of `length`, without digits."""

    def prog():
        random.RandomString("word", length=length, numeric=False, special=False)

    return prog


def words(st):
    resources = st.export_stack().deployment.get("resources") or []
    return [r for r in resources if r["urn"].endswith("::word")]


def policy():
    pack = os.environ["CONVERGE_TEST_POLICY_PACK"]
    st = auto.create_or_select_stack(
        "pol", project_name="policyproj", program=strings(4), opts=opts(work_dir=PROJECT)
    )
    # A mandatory violation is the SDK's error, naming policy and message;
    # the update creates nothing.
    for op in (st.preview, st.up):
        try:
            op(policy_packs=[pack])
            raise AssertionError(f"{op.__name__} passed a mandatory violation")
        except auto.CommandError as e:
            assert "min-length" in str(e) and "length 4 is below 8" in str(e), str(e)
    assert words(st) == []
    # Long enough: the advisory violation reaches the event stream as a
    # policyEvent, and the update succeeds.
    st = auto.create_or_select_stack(
        "pol", project_name="policyproj", program=strings(12), opts=opts(work_dir=PROJECT)
    )
    events = []
    up = st.up(policy_packs=[pack], on_event=events.append)
    assert up.summary.result == "succeeded"
    policy_events = [e.policy_event for e in events if e.policy_event]
    assert [
        (p.policy_name, p.policy_pack_name, p.enforcement_level) for p in policy_events
    ] == [("prefer-numeric", "strings", "advisory")], [vars(p) for p in policy_events]
    assert policy_events[0].resource_urn.endswith("::word"), policy_events[0].resource_urn
    assert len(words(st)) == 1
    # `policy_pack_configs` reaches the pack: 12 is now too short.
    with tempfile.TemporaryDirectory() as d:
        config = os.path.join(d, "longer.json")
        with open(config, "w", encoding="utf-8") as f:
            json.dump({"min-length": {"minLength": 20}}, f)
        events = []
        try:
            st.preview(policy_packs=[pack], policy_pack_configs=[config], on_event=events.append)
            raise AssertionError("preview passed a mandatory violation from the config")
        except auto.CommandError as e:
            assert "length 12 is below 20" in str(e), str(e)
        mandatory = [
            e.policy_event for e in events
            if e.policy_event and e.policy_event.enforcement_level == "mandatory"
        ]
        assert [p.policy_name for p in mandatory] == ["min-length"], events
    st.destroy()
    st.workspace.remove_stack("pol")


def concurrent():
    """Two updates of one stack from one program, as a platform team's
    service might start them: the second raises the SDK's
    ConcurrentUpdateError; `Stack.cancel()` then stops the first, which
    records what it did and releases the stack, and the next update
    finishes the job."""
    import threading
    import time

    import pulumi_command as command

    marks = tempfile.mkdtemp()

    def slow():
        first = command.local.Command(
            "first", create=f"touch {marks}/started && sleep 4 && touch {marks}/first"
        )
        command.local.Command(
            "second",
            create=f"touch {marks}/second",
            opts=pulumi.ResourceOptions(depends_on=[first]),
        )

    st = auto.create_or_select_stack(
        "busy", project_name="busyproj", program=slow, opts=opts(work_dir=PROJECT)
    )
    outcome = {}

    def run_first():
        try:
            outcome["result"] = st.up()
        except auto.CommandError as e:
            outcome["error"] = e

    runner = threading.Thread(target=run_first)
    runner.start()
    deadline = time.time() + 120
    while not os.path.exists(f"{marks}/started"):
        assert time.time() < deadline, "the first update never started"
        time.sleep(0.05)
    try:
        st.up()
        raise AssertionError("a second update of a busy stack ran")
    except auto.ConcurrentUpdateError as e:
        assert "the stack is currently locked by" in str(e), str(e)
    st.cancel()
    runner.join(timeout=120)
    assert not runner.is_alive()
    # Interrupted while `first` ran: `first` finished and is recorded,
    # `second` never started, nothing is left pending.
    assert "error" in outcome, outcome
    assert os.path.exists(f"{marks}/first") and not os.path.exists(f"{marks}/second")
    deployment = st.export_stack().deployment
    names = [r["urn"].split("::")[-1] for r in deployment["resources"]]
    assert "first" in names and "second" not in names, names
    assert not deployment.get("pending_operations"), deployment
    again = st.up()
    assert again.summary.result == "succeeded"
    assert os.path.exists(f"{marks}/second")
    st.destroy()
    st.workspace.remove_stack("busy")


{
    "local": local,
    "inline": inline,
    "transports": transports,
    "failure": failure,
    "policy": policy,
    "concurrent": concurrent,
    "counts": counts,
}[MODE]()
print("automation: ok")
