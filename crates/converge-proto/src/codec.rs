//! The codec every generated client and server uses: prost's encoding,
//! and decoding that first bounds how deep the message nests
//! ([`check_nesting`] at [`MAX_MESSAGE_DEPTH`]), since prost itself is
//! built without its recursion limit (100 levels, far below what Pulumi's
//! peers send).
//!
//! Decoding a message that deep recurses once per level: a thread that
//! decodes one needs a stack to match (the `converge` binary's and the
//! test plugin's runtimes have one).

use std::marker::PhantomData;

use prost::bytes::Buf;
use prost::Message;
use tonic::codec::{Codec, DecodeBuf, Decoder};
use tonic::Status;
use tonic_prost::ProstEncoder;

use crate::nesting::{check_nesting, TooDeep, MAX_MESSAGE_DEPTH};

/// A message's bytes that could not be decoded.
#[derive(Debug, thiserror::Error)]
pub enum DecodeMessageError {
    #[error(transparent)]
    TooDeep(#[from] TooDeep),
    #[error("malformed message: {0}")]
    Malformed(#[from] prost::DecodeError),
}

/// Decodes a message from bytes outside gRPC's framing (an `Any`'s
/// value, a status's details, a callback's payload) with the same bound
/// on nesting as gRPC messages.
pub fn decode_message<M: Message + Default>(bytes: &[u8]) -> Result<M, DecodeMessageError> {
    check_nesting(bytes, MAX_MESSAGE_DEPTH)?;
    Ok(M::decode(bytes)?)
}

/// `application/grpc+proto` with prost, nesting bounded on decode.
#[derive(Debug, Clone)]
pub struct ConvergeCodec<T, U> {
    _messages: PhantomData<(T, U)>,
}

impl<T, U> Default for ConvergeCodec<T, U> {
    fn default() -> Self {
        Self {
            _messages: PhantomData,
        }
    }
}

impl<T, U> Codec for ConvergeCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = DepthCheckedDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstEncoder::default()
    }

    fn decoder(&mut self) -> Self::Decoder {
        DepthCheckedDecoder {
            _message: PhantomData,
        }
    }
}

/// Decodes `U` once [`check_nesting`] has passed its bytes.
#[derive(Debug)]
pub struct DepthCheckedDecoder<U> {
    _message: PhantomData<U>,
}

impl<U: Message + Default> Decoder for DepthCheckedDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        // tonic hands over one message in one contiguous buffer.
        let checked = if buf.chunk().len() == buf.remaining() {
            check_nesting(buf.chunk(), MAX_MESSAGE_DEPTH)
        } else {
            let bytes = buf.copy_to_bytes(buf.remaining());
            check_nesting(&bytes, MAX_MESSAGE_DEPTH)?;
            return U::decode(bytes).map(Some).map_err(malformed);
        };
        checked?;
        U::decode(buf).map(Some).map_err(malformed)
    }
}

impl From<TooDeep> for Status {
    fn from(e: TooDeep) -> Self {
        Status::invalid_argument(e.to_string())
    }
}

fn malformed(e: prost::DecodeError) -> Status {
    // As tonic's own prost codec: a message that does not parse is INTERNAL.
    Status::internal(e.to_string())
}
