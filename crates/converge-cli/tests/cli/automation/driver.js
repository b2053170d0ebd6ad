// Drives `converge`, exposed as `pulumi` on PATH, with the published
// Automation API of `@pulumi/pulumi` (npm), unmodified: a local program
// and an inline one. Usage: node driver.js local|inline|policy
// PROJECT_DIR; `policy` runs the pack in CONVERGE_TEST_POLICY_PACK (the
// strings pack of `policy/strings_pack.js`) through `policyPacks`.
// The backend, passphrase and Converge home come from the environment;
// every check is an assertion, and the last line printed is
// `automation: ok`.

const assert = require("assert");
const pulumi = require("@pulumi/pulumi");
const { LocalWorkspace, PulumiCommand } = require("@pulumi/pulumi/automation");

const [mode, project] = process.argv.slice(2);
const envVars = {};
for (const k of ["PULUMI_BACKEND_URL", "PULUMI_ACCESS_TOKEN", "PULUMI_CONFIG_PASSPHRASE", "CONVERGE_HOME"]) {
    if (process.env[k] !== undefined) {
        envVars[k] = process.env[k];
    }
}
assert(process.env.PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK === undefined);

async function local() {
    const pulumiCommand = await PulumiCommand.get();
    assert.strictEqual(pulumiCommand.version.major, 3);
    const stack = await LocalWorkspace.createOrSelectStack(
        { stackName: "dev", workDir: project },
        { envVars, pulumiCommand },
    );
    await stack.setConfig("length", { value: "10" });
    await stack.setConfig("token", { value: "node-secret", secret: true });
    await stack.setAllConfig({ a: { value: "1" }, b: { value: "2", secret: true } });
    assert.strictEqual((await stack.getConfig("token")).value, "node-secret");
    assert.strictEqual((await stack.getAllConfig())["nodeauto:b"].secret, true);

    const events = [];
    const preview = await stack.preview({ onEvent: (e) => events.push(e) });
    assert.deepStrictEqual(preview.changeSummary, { create: 2 });
    assert.ok(events[0].preludeEvent, JSON.stringify(events[0]));
    assert.ok(events[events.length - 1].cancelEvent);

    const upEvents = [];
    const up = await stack.up({ onEvent: (e) => upEvents.push(e) });
    assert.strictEqual(up.summary.result, "succeeded");
    assert.deepStrictEqual(up.summary.resourceChanges, { create: 2 });
    assert.strictEqual(up.outputs.word.value.length, 10);
    assert.strictEqual(up.outputs.token.secret, true);
    assert.strictEqual(up.outputs.token.value, "node-secret");
    assert.ok(upEvents.some((e) => e.resOutputsEvent && e.resOutputsEvent.metadata.urn.endsWith("::word")));

    const noop = await stack.preview();
    assert.deepStrictEqual(noop.changeSummary, { same: 2 });
    const history = await stack.history();
    assert.deepStrictEqual(history.map((h) => h.kind), ["update"]);
    await stack.refresh();
    const state = await stack.exportStack();
    await stack.importStack(state);
    const who = await stack.workspace.whoAmI();
    assert.strictEqual(who.url, envVars.PULUMI_BACKEND_URL);
    const stacks = await stack.workspace.listStacks();
    assert.ok(stacks.some((s) => s.name === "dev" && s.current && s.resourceCount === 3), JSON.stringify(stacks));
    const destroyed = await stack.destroy();
    assert.deepStrictEqual(destroyed.summary.resourceChanges, { delete: 2 });
    await stack.workspace.removeStack("dev");
}

async function inline() {
    const program = async () => {
        const word = new pulumi.CustomResource("random:index/randomString:RandomString", "word", {
            length: 7,
            special: false,
            result: undefined,
        });
        return { word: word.result, hidden: pulumi.secret("inline-node") };
    };
    const stack = await LocalWorkspace.createOrSelectStack(
        { stackName: "inl", projectName: "nodeinline", program },
        { envVars, workDir: project },
    );
    const up = await stack.up();
    assert.deepStrictEqual(up.summary.resourceChanges, { create: 2 });
    assert.strictEqual(up.summary.environment["exec.kind"], "auto.inline");
    assert.strictEqual(up.outputs.word.value.length, 7);
    assert.strictEqual(up.outputs.hidden.value, "inline-node");
    assert.strictEqual(up.outputs.hidden.secret, true);
    const noop = await stack.preview();
    assert.deepStrictEqual(noop.changeSummary, { same: 2 });
    await stack.refresh();
    const destroyed = await stack.destroy();
    assert.deepStrictEqual(destroyed.summary.resourceChanges, { delete: 2 });
    await stack.workspace.removeStack("inl");
}

function strings(length) {
    return async () => {
        new pulumi.CustomResource("random:index/randomString:RandomString", "word", {
            length,
            numeric: false,
            special: false,
            result: undefined,
        });
    };
}

async function words(stack) {
    const state = await stack.exportStack();
    return (state.deployment.resources || []).filter((r) => r.urn.endsWith("::word"));
}

async function policy() {
    const pack = process.env.CONVERGE_TEST_POLICY_PACK;
    let stack = await LocalWorkspace.createOrSelectStack(
        { stackName: "pol", projectName: "nodepolicy", program: strings(4) },
        { envVars, workDir: project },
    );
    // A mandatory violation rejects the SDK's promise with its message;
    // the update creates nothing.
    for (const op of ["preview", "up"]) {
        await assert.rejects(stack[op]({ policyPacks: [pack] }), (e) => {
            assert.ok(/min-length/.test(e.message) && /length 4 is below 8/.test(e.message), e.message);
            return true;
        });
    }
    assert.deepStrictEqual(await words(stack), []);
    // Long enough: the advisory violation is a policyEvent in the stream.
    stack = await LocalWorkspace.createOrSelectStack(
        { stackName: "pol", projectName: "nodepolicy", program: strings(12) },
        { envVars, workDir: project },
    );
    const events = [];
    const up = await stack.up({ policyPacks: [pack], onEvent: (e) => events.push(e) });
    assert.strictEqual(up.summary.result, "succeeded");
    const policyEvents = events.filter((e) => e.policyEvent).map((e) => e.policyEvent);
    assert.deepStrictEqual(
        policyEvents.map((p) => [p.policyName, p.policyPackName, p.enforcementLevel]),
        [["prefer-numeric", "node-strings", "advisory"]],
        JSON.stringify(policyEvents),
    );
    assert.ok(policyEvents[0].resourceUrn.endsWith("::word"), policyEvents[0].resourceUrn);
    assert.strictEqual((await words(stack)).length, 1);
    await stack.destroy();
    await stack.workspace.removeStack("pol");
}

({ local, inline, policy })[mode]().then(
    () => console.log("automation: ok"),
    (e) => {
        console.error(e);
        process.exit(1);
    },
);
