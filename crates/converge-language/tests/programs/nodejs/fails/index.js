// A program that throws.
"use strict";
const pulumi = require("@pulumi/pulumi");

exports.before = "set";

function explode() {
    throw new Error("the program broke on purpose");
}

explode();
