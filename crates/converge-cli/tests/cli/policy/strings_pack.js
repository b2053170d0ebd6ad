const { PolicyPack } = require("@pulumi/policy");

const STRING = "random:index/randomString:RandomString";

new PolicyPack("node-strings", {
    enforcementLevel: "mandatory",
    policies: [
        {
            name: "min-length",
            description: "Random strings are long enough.",
            severity: "high",
            configSchema: { properties: { minLength: { type: "integer", minimum: 1, default: 8 } } },
            validateResource: (args, reportViolation) => {
                if (args.type !== STRING) { return; }
                const { minLength } = args.getConfig();
                if (typeof args.props.length === "number" && args.props.length < minLength) {
                    reportViolation(`length ${args.props.length} is below ${minLength}`);
                }
            },
        },
        {
            name: "prefer-numeric",
            description: "Random strings should have digits.",
            enforcementLevel: "advisory",
            validateResource: (args, reportViolation) => {
                if (args.type === STRING && args.props.numeric === false) {
                    reportViolation("strings without digits are easier to guess");
                }
            },
        },
        {
            name: "no-special",
            description: "Random strings have no special characters.",
            enforcementLevel: "remediate",
            remediateResource: (args) => {
                if (args.type === STRING && args.props.special !== false) {
                    return { ...args.props, special: false };
                }
                return undefined;
            },
        },
        {
            name: "max-strings",
            description: "A stack has few random strings.",
            configSchema: { properties: { max: { type: "integer", default: 3 } } },
            validateStack: (args, reportViolation) => {
                const { max } = args.getConfig();
                const n = args.resources.filter(r => r.type === STRING).length;
                if (n > max) { reportViolation(`${n} strings, at most ${max}`); }
            },
        },
    ],
});
