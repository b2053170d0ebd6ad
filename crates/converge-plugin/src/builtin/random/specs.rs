//! The property tables of pulumi-random 4.x's resources (names, types,
//! defaults and secrets as its schema has them; descriptions are ours).

use crate::builtin::spec::{Dflt, Prop, Spec, Ty};

const KEEPERS: Prop = Prop::new(
    "keepers",
    Ty::StrMap,
    "Arbitrary values; changing any of them replaces the resource (and so draws a new value).",
)
.replace();

const fn flag(name: &'static str, doc: &'static str) -> Prop {
    Prop::new(name, Ty::Bool, doc)
        .default(Dflt::Bool(true))
        .replace()
}

const fn min(name: &'static str, doc: &'static str) -> Prop {
    Prop::new(name, Ty::Int, doc)
        .default(Dflt::Int(0))
        .replace()
}

macro_rules! string_inputs {
    ($what:literal) => {
        [
            KEEPERS,
            Prop::new(
                "length",
                Ty::Int,
                concat!(
                    "The length of the ",
                    $what,
                    ": at least 1 and at least the sum of the minimums."
                ),
            )
            .required()
            .replace(),
            flag("lower", "Use lower-case letters. Defaults to true."),
            min("minLower", "The least number of lower-case letters. Defaults to 0."),
            min("minNumeric", "The least number of digits. Defaults to 0."),
            min(
                "minSpecial",
                "The least number of special characters. Defaults to 0.",
            ),
            min("minUpper", "The least number of upper-case letters. Defaults to 0."),
            flag(
                "number",
                "Use digits. Defaults to true. Deprecated: use `numeric`; the two always agree.",
            ),
            flag("numeric", "Use digits. Defaults to true."),
            Prop::new(
                "overrideSpecial",
                Ty::Str,
                "The special characters to use instead of `!@#$%&*()-_=+[]{}<>:?` \
                 (only when `special` is true).",
            )
            .replace(),
            flag(
                "special",
                "Use special characters (`!@#$%&*()-_=+[]{}<>:?` unless overridden). Defaults to true.",
            ),
            flag("upper", "Use upper-case letters. Defaults to true."),
        ]
    };
}

pub(super) static STRING: Spec = Spec {
    token: "random:index/randomString:RandomString",
    doc: "A random string of letters, digits and (optionally) special characters, drawn from \
          a cryptographic generator. Not secret: use RandomPassword for secrets.",
    inputs: &string_inputs!("string"),
    outputs: &[Prop::new("result", Ty::Str, "The generated string.").required()],
};

pub(super) static PASSWORD: Spec = Spec {
    token: "random:index/randomPassword:RandomPassword",
    doc: "Like RandomString, but the result is secret; also gives a bcrypt hash of it.",
    inputs: &string_inputs!("password"),
    outputs: &[
        Prop::new(
            "bcryptHash",
            Ty::Str,
            "A bcrypt hash (cost 10) of the result.",
        )
        .required()
        .secret(),
        Prop::new("result", Ty::Str, "The generated password.")
            .required()
            .secret(),
    ],
};

pub(super) static INTEGER: Spec = Spec {
    token: "random:index/randomInteger:RandomInteger",
    doc: "A random integer in the inclusive range [min, max].",
    inputs: &[
        KEEPERS,
        Prop::new("max", Ty::Int, "The largest value (inclusive).")
            .required()
            .replace(),
        Prop::new("min", Ty::Int, "The smallest value (inclusive).")
            .required()
            .replace(),
        Prop::new(
            "seed",
            Ty::Str,
            "A seed: the same seed and range give the same value.",
        )
        .replace(),
    ],
    outputs: &[Prop::new("result", Ty::Int, "The generated integer.").required()],
};

pub(super) static PET: Spec = Spec {
    token: "random:index/randomPet:RandomPet",
    doc: "A random pet name (adverbs, an adjective and an animal) to use in identifiers. \
          The name is the resource's ID.",
    inputs: &[
        KEEPERS,
        Prop::new("length", Ty::Int, "The number of words. Defaults to 2.")
            .default(Dflt::Int(2))
            .replace(),
        Prop::new("prefix", Ty::Str, "A word to put in front of the name.").replace(),
        Prop::new(
            "separator",
            Ty::Str,
            "What goes between words. Defaults to \"-\".",
        )
        .default(Dflt::Str("-"))
        .replace(),
    ],
    outputs: &[],
};

const UUID_RESULT: [Prop; 1] = [Prop::new("result", Ty::Str, "The generated UUID.").required()];

pub(super) static UUID: Spec = Spec {
    token: "random:index/randomUuid:RandomUuid",
    doc: "A random (version 4) UUID.",
    inputs: &[KEEPERS],
    outputs: &UUID_RESULT,
};

pub(super) static UUID4: Spec = Spec {
    token: "random:index/randomUuid4:RandomUuid4",
    doc: "A random version 4 UUID.",
    inputs: &[KEEPERS],
    outputs: &UUID_RESULT,
};

pub(super) static UUID7: Spec = Spec {
    token: "random:index/randomUuid7:RandomUuid7",
    doc: "A version 7 (time-ordered) UUID.",
    inputs: &[KEEPERS],
    outputs: &UUID_RESULT,
};

pub(super) static ID: Spec = Spec {
    token: "random:index/randomId:RandomId",
    doc: "Random bytes meant as a unique identifier, in several encodings. Not secret: use \
          RandomBytes for secrets.",
    inputs: &[
        Prop::new(
            "byteLength",
            Ty::Int,
            "The number of random bytes (at least 1).",
        )
        .required()
        .replace(),
        KEEPERS,
        Prop::new(
            "prefix",
            Ty::Str,
            "Text put as-is in front of every encoding (not of the ID).",
        )
        .replace(),
    ],
    outputs: &[
        Prop::new(
            "b64Std",
            Ty::Str,
            "The prefix, then the bytes in padded standard base64.",
        )
        .required(),
        Prop::new(
            "b64Url",
            Ty::Str,
            "The prefix, then the bytes in unpadded URL-safe base64.",
        )
        .required(),
        Prop::new(
            "dec",
            Ty::Str,
            "The prefix, then the bytes as a big-endian decimal number.",
        )
        .required(),
        Prop::new(
            "hex",
            Ty::Str,
            "The prefix, then the bytes in lower-case hex.",
        )
        .required(),
    ],
};

pub(super) static SHUFFLE: Spec = Spec {
    token: "random:index/randomShuffle:RandomShuffle",
    doc: "A random permutation of a list of strings.",
    inputs: &[
        Prop::new("inputs", Ty::StrList, "The strings to shuffle.")
            .required()
            .replace(),
        KEEPERS,
        Prop::new(
            "resultCount",
            Ty::Int,
            "How many results (default: as many as inputs). More than there are inputs repeats \
             them, each at most once per round.",
        )
        .replace(),
        Prop::new(
            "seed",
            Ty::Str,
            "A seed: the same seed and inputs give the same order.",
        )
        .replace(),
    ],
    outputs: &[Prop::new("results", Ty::StrList, "The shuffled strings.").required()],
};

pub(super) static BYTES: Spec = Spec {
    token: "random:index/randomBytes:RandomBytes",
    doc: "Random bytes meant as a secret or key; both encodings are secret.",
    inputs: &[
        KEEPERS,
        Prop::new("length", Ty::Int, "The number of bytes (at least 1).")
            .required()
            .replace(),
    ],
    outputs: &[
        Prop::new("base64", Ty::Str, "The bytes in padded standard base64.")
            .required()
            .secret(),
        Prop::new("hex", Ty::Str, "The bytes in lower-case hex.")
            .required()
            .secret(),
    ],
};
