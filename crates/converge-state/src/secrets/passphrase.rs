//! Being written.
#[derive(Debug)]
pub struct PassphraseCrypter;
#[derive(Debug)]
pub struct PassphraseError;
