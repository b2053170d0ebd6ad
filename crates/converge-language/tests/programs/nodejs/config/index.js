// Configuration and secret configuration.
"use strict";
const pulumi = require("@pulumi/pulumi");

const config = new pulumi.Config();
exports.name = config.require("name");
exports.password = config.requireSecret("password");
exports.count = config.requireNumber("count");
exports.obj = config.requireObject("obj");
exports.fallback = config.get("missing") || "default";
exports.project = pulumi.getProject();
exports.stack = pulumi.getStack();
exports.organization = pulumi.getOrganization();
