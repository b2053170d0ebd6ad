// Stack outputs of every kind of value.
"use strict";
const pulumi = require("@pulumi/pulumi");

const thing = new pulumi.CustomResource("pkg:index:Thing", "thing", {
    label: "t",
    computed: undefined,
});

module.exports = {
    string: "hello",
    number: 42,
    float: 1.5,
    bool: true,
    list: [1, "two", false],
    dict: { a: 1, nested: { b: [true] } },
    secret: pulumi.secret("hidden"),
    asset: new pulumi.asset.StringAsset("contents"),
    archive: new pulumi.asset.AssetArchive({ "a.txt": new pulumi.asset.StringAsset("a") }),
    thingId: thing.id,
    thingUrn: thing.urn,
    computed: thing.computed,
};
