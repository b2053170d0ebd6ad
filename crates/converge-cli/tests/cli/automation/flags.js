// Drives `converge`, exposed as `pulumi` on PATH, with the published
// Automation API of `@pulumi/pulumi`: the logging and debugging options
// (`debug`, `logVerbosity`, `logToStdErr`, `logFlow`, `tracing`),
// `userAgent` and `color` on preview, up, refresh and destroy;
// `attachDebugger` refused; `destroy({ excludeProtected: true })`.
//
// Usage: node flags.js PROJECT_DIR (the project of automation_flags.rs).
// The last line printed is `flags: ok`.

const assert = require("assert");
const { LocalWorkspace } = require("@pulumi/pulumi/automation");

const project = process.argv[2];
const envVars = {};
for (const k of ["PULUMI_BACKEND_URL", "PULUMI_CONFIG_PASSPHRASE", "CONVERGE_HOME"]) {
    if (process.env[k] !== undefined) envVars[k] = process.env[k];
}
const loud = {
    debug: true,
    logVerbosity: 3,
    logToStdErr: true,
    logFlow: true,
    tracing: "file://" + process.cwd() + "/traces.json",
    userAgent: "flags-test/1.0",
    color: "never",
};

function checkLogs(result, what) {
    assert(result.stderr.includes("DEBUG converge::commands::deploy: the engine starts"), `${what}: ${result.stderr}`);
    assert(result.stderr.includes("does not emit Pulumi's traces"), `${what}: ${result.stderr}`);
}

(async () => {
    const st = await LocalWorkspace.createOrSelectStack({ stackName: "dev", workDir: project }, { envVars });
    checkLogs(await st.preview(loud), "preview");
    const up = await st.up(loud);
    checkLogs(up, "up");
    assert(up.stdout.includes("debug: the marker of --debug"), up.stdout);
    checkLogs(await st.refresh(loud), "refresh");

    const history = await st.history(1);
    assert.strictEqual(history[0].environment["exec.agent"], "flags-test/1.0", JSON.stringify(history[0]));

    await assert.rejects(st.preview({ attachDebugger: true }), (e) => String(e).includes("--attach-debugger"));

    const names = async () =>
        (await st.exportStack()).deployment.resources.map((r) => r.urn.split("::").pop().split("_")[0]).sort();
    const destroy = await st.destroy({ ...loud, excludeProtected: true });
    checkLogs(destroy, "destroy");
    assert.deepStrictEqual(await names(), ["default", "dep", "keep", "proj-dev", "shelf"]);
    console.log("flags: ok");
})().catch((e) => {
    console.error(e);
    process.exit(1);
});
