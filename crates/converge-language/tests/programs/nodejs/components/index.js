// Components with children, an explicit provider, dependencies.
"use strict";
const pulumi = require("@pulumi/pulumi");

class Thing extends pulumi.CustomResource {
    constructor(name, props, opts) {
        super("pkg:index:Thing", name, { ...props, computed: undefined }, opts);
    }
}

class Pair extends pulumi.ComponentResource {
    constructor(name, opts) {
        super("my:index:Pair", name, {}, opts);
        this.left = new Thing(`${name}-left`, { side: "left" }, { parent: this });
        this.right = new Thing(
            `${name}-right`,
            { side: "right", other: this.left.computed },
            { parent: this },
        );
        this.registerOutputs({ right: this.right.computed });
    }
}

const explicit = new pulumi.ProviderResource("pkg", "explicit", { region: "mars" });
const pair = new Pair("pair");
const managed = new Thing("managed", { x: 1 }, { provider: explicit, dependsOn: [pair.left] });

exports.right = pair.right.computed;
exports.managedId = managed.id;
