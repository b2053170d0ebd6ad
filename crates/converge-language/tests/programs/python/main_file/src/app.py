"""A program named by `main:`, importing a module beside it."""

import pulumi

import helper

pulumi.export("greeting", helper.greeting())
