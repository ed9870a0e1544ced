//! A tonic [`Codec`] for JSON messages (serde), for gRPC services written without protobuf, such
//! as Ray-style actors whose requests are a [`crate::RemoteCall`].

use std::marker::PhantomData;

use bytes::{Buf, BufMut};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tonic::Status;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};

use crate::error::Error;

/// Encodes `E` and decodes `D` as JSON (`serde_json`), one JSON document per gRPC message.
///
/// ```
/// use lens_tonic::{JsonCodec, RemoteCall};
///
/// // A client sending `RemoteCall<Args>` and receiving `String`:
/// let _codec: JsonCodec<RemoteCall<std::collections::BTreeMap<String, i64>>, String> = JsonCodec::new();
/// ```
pub struct JsonCodec<E, D> {
    _types: PhantomData<fn(E) -> D>,
}

impl<E, D> JsonCodec<E, D> {
    /// A codec.
    pub fn new() -> Self {
        JsonCodec {
            _types: PhantomData,
        }
    }
}

impl<E, D> Default for JsonCodec<E, D> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E, D> Clone for JsonCodec<E, D> {
    fn clone(&self) -> Self {
        Self::new()
    }
}

impl<E, D> std::fmt::Debug for JsonCodec<E, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JsonCodec")
    }
}

/// The encoder of [`JsonCodec`].
#[derive(Debug)]
pub struct JsonEncoder<E> {
    _type: PhantomData<fn(E)>,
}

/// The decoder of [`JsonCodec`].
#[derive(Debug)]
pub struct JsonDecoder<D> {
    _type: PhantomData<fn() -> D>,
}

impl<E, D> Codec for JsonCodec<E, D>
where
    E: Serialize + Send + 'static,
    D: DeserializeOwned + Send + 'static,
{
    type Encode = E;
    type Decode = D;
    type Encoder = JsonEncoder<E>;
    type Decoder = JsonDecoder<D>;

    fn encoder(&mut self) -> Self::Encoder {
        JsonEncoder { _type: PhantomData }
    }

    fn decoder(&mut self) -> Self::Decoder {
        JsonDecoder { _type: PhantomData }
    }
}

impl<E: Serialize> Encoder for JsonEncoder<E> {
    type Item = E;
    type Error = Status;

    fn encode(&mut self, item: E, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        serde_json::to_writer(dst.writer(), &item).map_err(|e| Error::JsonEncode(e).into())
    }
}

impl<D: DeserializeOwned> Decoder for JsonDecoder<D> {
    type Item = D;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<D>, Status> {
        let bytes = src.copy_to_bytes(src.remaining());
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| Error::JsonDecode(e).into())
    }
}
