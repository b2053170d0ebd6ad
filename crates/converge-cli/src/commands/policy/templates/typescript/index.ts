// The __NAME__ policy pack.
//
// Run it with `converge preview --policy-pack <this directory>` (or
// `pulumi preview`) from a project's directory. Each policy's level and
// settings can be changed without editing this file, with a JSON file
// passed as `--policy-pack-config`, for example:
//
//     {"forbidden-types": {"types": ["random:index/randomPassword:RandomPassword"]}}

import { PolicyPack } from "@pulumi/policy";

new PolicyPack("__NAME__", {
    enforcementLevel: "mandatory",
    policies: [
        {
            name: "forbidden-types",
            description: "No resource of the types the configuration lists.",
            configSchema: {
                properties: {
                    types: { type: "array", items: { type: "string" }, default: [] },
                },
            },
            // Called for every resource, with the inputs the provider checked.
            validateResource: (args, reportViolation) => {
                const { types } = args.getConfig<{ types: string[] }>();
                if (types.includes(args.type)) {
                    reportViolation(`resources of type ${args.type} are not allowed in this stack`);
                }
            },
        },
        {
            name: "max-resources",
            description: "A stack stays small enough to review.",
            enforcementLevel: "advisory",
            configSchema: {
                properties: { max: { type: "integer", minimum: 0, default: 100 } },
            },
            // Called once, with every resource of the stack after the update.
            validateStack: (args, reportViolation) => {
                const { max } = args.getConfig<{ max: number }>();
                if (args.resources.length > max) {
                    reportViolation(`the stack has ${args.resources.length} resources; the limit is ${max}`);
                }
            },
        },
    ],
});
