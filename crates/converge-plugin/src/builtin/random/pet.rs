//! RandomPet: `length` words joined by `separator`: one word is an animal;
//! two are an adjective and an animal; more put adverbs in front. A
//! `prefix` comes first. The word lists are Converge's own.

use converge_model::PropertyMap;
use rand::rngs::OsRng;
use rand::seq::SliceRandom;

use crate::builtin::spec::{get_int, get_str};

pub(super) const ADVERBS: &[&str] = &[
    "amply", "boldly", "brightly", "briskly", "calmly", "cheerily", "cleanly", "closely", "deftly",
    "duly", "eagerly", "easily", "evenly", "fairly", "finely", "firmly", "freely", "gently",
    "gladly", "gravely", "happily", "highly", "humbly", "jointly", "justly", "keenly", "kindly",
    "lightly", "loosely", "loyally", "mainly", "merrily", "mildly", "neatly", "nicely", "openly",
    "plainly", "politely", "promptly", "proudly", "purely", "quickly", "quietly", "rapidly",
    "readily", "really", "richly", "safely", "sharply", "simply", "smoothly", "softly", "solidly",
    "steadily", "surely", "swiftly", "tenderly", "truly", "vastly", "warmly", "wisely",
];

pub(super) const ADJECTIVES: &[&str] = &[
    "able", "amber", "ample", "azure", "bold", "brave", "bright", "brisk", "calm", "candid",
    "civil", "clever", "cosmic", "crisp", "daring", "dapper", "eager", "early", "epic", "fair",
    "fancy", "fleet", "fond", "frank", "fresh", "gentle", "giant", "golden", "grand", "hardy",
    "hearty", "honest", "humble", "jolly", "keen", "kind", "lively", "loyal", "lucid", "lucky",
    "merry", "mighty", "modest", "noble", "polite", "proper", "proud", "quick", "quiet", "rapid",
    "ready", "robust", "rosy", "rustic", "sharp", "shiny", "silent", "sleek", "smart", "snowy",
    "steady", "sturdy", "sunny", "swift", "tidy", "topical", "vivid", "warm", "wise", "witty",
    "zesty",
];

pub(super) const ANIMALS: &[&str] = &[
    "alpaca", "antelope", "badger", "beaver", "bison", "bobcat", "buffalo", "camel", "caribou",
    "cheetah", "chipmunk", "cougar", "coyote", "crane", "dingo", "dolphin", "donkey", "eagle",
    "egret", "falcon", "ferret", "finch", "fox", "gazelle", "gecko", "gibbon", "giraffe", "goose",
    "gopher", "heron", "hedgehog", "ibex", "iguana", "impala", "jackal", "jaguar", "kestrel",
    "koala", "lemur", "leopard", "llama", "lynx", "magpie", "marmot", "meerkat", "mink", "moose",
    "narwhal", "newt", "ocelot", "octopus", "otter", "owl", "panda", "parrot", "pelican",
    "penguin", "puffin", "quail", "rabbit", "raccoon", "raven", "salmon", "seal", "sparrow",
    "squirrel", "stork", "swan", "tapir", "tiger", "toucan", "turtle", "walrus", "weasel",
    "wombat", "wren", "yak", "zebra",
];

fn pick(words: &[&'static str]) -> &'static str {
    words.choose(&mut OsRng).copied().unwrap_or("pet")
}

/// The pet name (which is also the resource's ID).
pub(super) fn generate(inputs: &PropertyMap) -> String {
    let length = get_int(inputs, "length").unwrap_or(2).max(1);
    let separator = get_str(inputs, "separator").unwrap_or("-");
    let mut words: Vec<&str> = Vec::new();
    if let Some(prefix) = get_str(inputs, "prefix").filter(|p| !p.is_empty()) {
        words.push(prefix);
    }
    for _ in 2..length {
        words.push(pick(ADVERBS));
    }
    if length >= 2 {
        words.push(pick(ADJECTIVES));
    }
    words.push(pick(ANIMALS));
    words.join(separator)
}
