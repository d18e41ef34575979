//! The tensors of an Open Inference Protocol (KServe v2) request and answer: the JSON
//! body, or — with the binary tensor data extension — a JSON header of
//! `Inference-Header-Content-Length` bytes followed by the raw data of every input whose
//! `parameters.binary_data_size` is set, in the order of the inputs. Fixed-size data is
//! little-endian and row-major; a `BYTES` element is a 4-byte little-endian length and its
//! bytes.
//!
//! Every size is checked against the shape before anything is allocated from it: a shape
//! is only believed as far as the bytes present bear it out, so no request can make the
//! parser allocate more than its body's worth, and nothing here panics on any input.

use serde_json::{Map, Value};

/// The element types of the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataType {
    /// One byte, 0 or 1.
    Bool,
    /// Unsigned integers.
    U8,
    /// 16-bit unsigned.
    U16,
    /// 32-bit unsigned.
    U32,
    /// 64-bit unsigned.
    U64,
    /// Signed integers.
    I8,
    /// 16-bit signed.
    I16,
    /// 32-bit signed.
    I32,
    /// 64-bit signed.
    I64,
    /// IEEE half precision (binary only: JSON has no 16-bit float).
    F16,
    /// bfloat16 (binary only).
    Bf16,
    /// IEEE single precision.
    F32,
    /// IEEE double precision.
    F64,
    /// Byte strings of any length (text, an encoded file).
    Bytes,
}

impl DataType {
    /// The protocol's name for a type, e.g. `FP32`.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "BOOL" => Self::Bool,
            "UINT8" => Self::U8,
            "UINT16" => Self::U16,
            "UINT32" => Self::U32,
            "UINT64" => Self::U64,
            "INT8" => Self::I8,
            "INT16" => Self::I16,
            "INT32" => Self::I32,
            "INT64" => Self::I64,
            "FP16" => Self::F16,
            "BF16" => Self::Bf16,
            "FP32" => Self::F32,
            "FP64" => Self::F64,
            "BYTES" => Self::Bytes,
            _ => return None,
        })
    }

    /// The protocol's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Bool => "BOOL",
            Self::U8 => "UINT8",
            Self::U16 => "UINT16",
            Self::U32 => "UINT32",
            Self::U64 => "UINT64",
            Self::I8 => "INT8",
            Self::I16 => "INT16",
            Self::I32 => "INT32",
            Self::I64 => "INT64",
            Self::F16 => "FP16",
            Self::Bf16 => "BF16",
            Self::F32 => "FP32",
            Self::F64 => "FP64",
            Self::Bytes => "BYTES",
        }
    }

    /// Bytes per element (`None` for `BYTES`, whose elements each carry their length).
    pub fn size(self) -> Option<usize> {
        match self {
            Self::Bool | Self::U8 | Self::I8 => Some(1),
            Self::U16 | Self::I16 | Self::F16 | Self::Bf16 => Some(2),
            Self::U32 | Self::I32 | Self::F32 => Some(4),
            Self::U64 | Self::I64 | Self::F64 => Some(8),
            Self::Bytes => None,
        }
    }
}

/// A tensor's elements.
#[derive(Debug, Clone, PartialEq)]
pub enum Data {
    /// Fixed-size elements, little-endian, row-major.
    Fixed(Vec<u8>),
    /// `BYTES` elements.
    Bytes(Vec<Vec<u8>>),
}

/// An input tensor as the request gives it, its data checked against its shape.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    /// Its name.
    pub name: String,
    /// Its element type.
    pub datatype: DataType,
    /// Its shape (each dimension at least 0).
    pub shape: Vec<u64>,
    /// Its elements: as many as the shape holds.
    pub data: Data,
}

impl Tensor {
    /// The elements as `f32` (`None` unless the tensor is `FP32`).
    pub fn f32s(&self) -> Option<Vec<f32>> {
        match (&self.data, self.datatype) {
            (Data::Fixed(b), DataType::F32) => Some(
                b.chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
            ),
            _ => None,
        }
    }
}

/// An output the request asks for, and whether it wants it as binary data.
#[derive(Debug, Clone, PartialEq)]
pub struct Wanted {
    /// The output's name.
    pub name: String,
    /// `parameters.binary_data` (`None`: the request's `binary_data_output`).
    pub binary: Option<bool>,
}

/// An inference request as read from its body.
#[derive(Debug, Clone, PartialEq)]
pub struct InferRequest {
    /// Its `id`, echoed in the answer.
    pub id: Option<String>,
    /// Its `parameters` (empty when absent).
    pub parameters: Map<String, Value>,
    /// Its inputs, in order.
    pub inputs: Vec<Tensor>,
    /// The outputs it asks for (empty: all of them).
    pub outputs: Vec<Wanted>,
}

impl InferRequest {
    /// Whether the output `name` goes back as binary data: its own `binary_data`, else the
    /// request's `binary_data_output`.
    pub fn binary(&self, name: &str) -> bool {
        self.outputs
            .iter()
            .find(|w| w.name == name)
            .and_then(|w| w.binary)
            .unwrap_or_else(|| {
                self.parameters
                    .get("binary_data_output")
                    .and_then(Value::as_bool)
                    .unwrap_or(false)
            })
    }
}

/// Why a request's body cannot be read (each the client's fault: 400), with what to send.
#[derive(Debug, thiserror::Error)]
pub enum TensorError {
    /// The `Inference-Header-Content-Length` header is no number.
    #[error(
        "the Inference-Header-Content-Length header is {0:?}: it must be the length in bytes of the JSON header that starts the body"
    )]
    HeaderLength(String),
    /// The JSON header would reach past the body.
    #[error(
        "Inference-Header-Content-Length says the JSON header is {header} bytes but the body has {body}: send the JSON's exact length"
    )]
    HeaderPastEnd {
        /// The length given.
        header: u64,
        /// The body's length.
        body: usize,
    },
    /// The JSON does not parse.
    #[error(
        "the request's JSON cannot be read; send {{\"inputs\": [{{\"name\", \"shape\", \"datatype\", \"data\"}}]}}"
    )]
    Json(#[source] serde_json::Error),
    /// A field has the wrong type or value.
    #[error("{field} {why}")]
    Field {
        /// Where, e.g. `inputs[0].shape`.
        field: String,
        /// What it must be.
        why: String,
    },
    /// An unknown datatype.
    #[error(
        "inputs[{index}].datatype is {given:?}, which is no datatype of the protocol; use one of BOOL, UINT8, INT32, INT64, FP32, BYTES, …"
    )]
    Datatype {
        /// The input's place.
        index: usize,
        /// What it said.
        given: String,
    },
    /// Two inputs have the same name.
    #[error("two inputs are named {0:?}: give each input once")]
    Duplicate(String),
    /// The shape's element count overflows.
    #[error("input {input:?} has shape {shape:?}, whose element count does not fit in 64 bits")]
    ShapeOverflow {
        /// The input.
        input: String,
        /// Its shape.
        shape: Vec<u64>,
    },
    /// The data has another number of elements than the shape.
    #[error(
        "input {input:?} has shape {shape:?} ({want} elements) but its data holds {given}: send exactly as many elements as the shape has"
    )]
    Count {
        /// The input.
        input: String,
        /// Its shape.
        shape: Vec<u64>,
        /// Elements of the shape.
        want: u64,
        /// Elements given.
        given: u64,
    },
    /// A JSON element is not of the datatype.
    #[error("input {input:?} element {index} is {given}, which is no {datatype} value")]
    Element {
        /// The input.
        input: String,
        /// The element's place in row-major order.
        index: usize,
        /// The element as given.
        given: String,
        /// The input's datatype.
        datatype: &'static str,
    },
    /// A 16-bit float in JSON.
    #[error(
        "input {0:?} is FP16 or BF16, which JSON cannot hold: send it as binary data (binary_data_size)"
    )]
    HalfInJson(String),
    /// An input with neither `data` nor `binary_data_size`.
    #[error(
        "input {0:?} has no data: give `data` (JSON) or parameters.binary_data_size (binary, with Inference-Header-Content-Length)"
    )]
    NoData(String),
    /// An input with both.
    #[error("input {0:?} has both `data` and parameters.binary_data_size: give one")]
    Both(String),
    /// Binary data without the header that says where the JSON ends.
    #[error(
        "input {0:?} has parameters.binary_data_size but the request has no Inference-Header-Content-Length header: send the JSON's length in it"
    )]
    NoHeader(String),
    /// An input's binary data reaches past the body.
    #[error(
        "input {input:?} says binary_data_size {size} but only {left} bytes of binary data are left in the body"
    )]
    PastEnd {
        /// The input.
        input: String,
        /// Its binary_data_size.
        size: u64,
        /// What remained.
        left: usize,
    },
    /// Bytes after the last input's binary data.
    #[error(
        "{0} bytes follow the inputs' binary data: the binary_data_size of the inputs must add up to the body after the JSON header"
    )]
    Leftover(usize),
    /// A fixed-size input's binary data is not elements × size.
    #[error(
        "input {input:?} is {datatype} of shape {shape:?}: its binary data must be {want} bytes, not {given}"
    )]
    BinarySize {
        /// The input.
        input: String,
        /// Its datatype.
        datatype: &'static str,
        /// Its shape.
        shape: Vec<u64>,
        /// Elements × element size, when it fits.
        want: String,
        /// binary_data_size.
        given: u64,
    },
    /// A `BYTES` element's length prefix reaches past its tensor's data.
    #[error(
        "input {input:?} BYTES element {index} declares {len} bytes but {left} are left in the tensor's binary data: each element is a 4-byte little-endian length and that many bytes"
    )]
    BytesPastEnd {
        /// The input.
        input: String,
        /// The element.
        index: u64,
        /// The length it declares.
        len: u64,
        /// What remained.
        left: usize,
    },
}

/// Every leaf of `v`, row-major: the protocol allows `data` flat or nested. The nesting
/// (and so this recursion) is bounded by serde_json's recursion limit of 128.
fn flatten<'a>(v: &'a Value, out: &mut Vec<&'a Value>) {
    match v {
        Value::Array(items) => {
            for i in items {
                flatten(i, out);
            }
        }
        other => out.push(other),
    }
}

/// Reads an inference request: `body` is all JSON, unless `header_len` (the
/// `Inference-Header-Content-Length` header) says where the JSON ends and the binary
/// tensor data starts.
pub fn parse_request(body: &[u8], header_len: Option<&str>) -> Result<InferRequest, TensorError> {
    let (json, mut binary) = match header_len {
        None => (body, None),
        Some(h) => {
            let n: u64 = h
                .trim()
                .parse()
                .map_err(|_| TensorError::HeaderLength(h.to_string()))?;
            let at = usize::try_from(n).ok().filter(|&n| n <= body.len()).ok_or(
                TensorError::HeaderPastEnd {
                    header: n,
                    body: body.len(),
                },
            )?;
            (&body[..at], Some(&body[at..]))
        }
    };
    let v: Value = serde_json::from_slice(json).map_err(TensorError::Json)?;
    let Value::Object(mut top) = v else {
        return Err(field("the request", "must be a JSON object"));
    };
    let id = match top.remove("id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(_) => return Err(field("id", "must be a string")),
    };
    let parameters = parameters_of(top.remove("parameters"), "parameters")?;
    let Some(Value::Array(raw_inputs)) = top.remove("inputs") else {
        return Err(field(
            "inputs",
            "must be an array of {\"name\", \"shape\", \"datatype\", \"data\"}",
        ));
    };
    let mut inputs: Vec<Tensor> = Vec::with_capacity(raw_inputs.len());
    for (index, raw) in raw_inputs.into_iter().enumerate() {
        let t = input(index, raw, &mut binary)?;
        if inputs.iter().any(|i| i.name == t.name) {
            return Err(TensorError::Duplicate(t.name));
        }
        inputs.push(t);
    }
    if let Some(rest) = binary
        && !rest.is_empty()
    {
        return Err(TensorError::Leftover(rest.len()));
    }
    let outputs = match top.remove("outputs") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(outs)) => outs
            .into_iter()
            .enumerate()
            .map(|(i, o)| wanted(i, o))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(field("outputs", "must be an array of {\"name\"}")),
    };
    Ok(InferRequest {
        id,
        parameters,
        inputs,
        outputs,
    })
}

fn field(field: &str, why: &str) -> TensorError {
    TensorError::Field {
        field: field.to_string(),
        why: why.to_string(),
    }
}

fn parameters_of(v: Option<Value>, at: &str) -> Result<Map<String, Value>, TensorError> {
    match v {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m),
        Some(_) => Err(field(at, "must be a JSON object")),
    }
}

fn wanted(index: usize, v: Value) -> Result<Wanted, TensorError> {
    let at = format!("outputs[{index}]");
    let Value::Object(mut o) = v else {
        return Err(field(&at, "must be an object with a \"name\""));
    };
    let Some(Value::String(name)) = o.remove("name") else {
        return Err(field(&format!("{at}.name"), "must be a string"));
    };
    let params = parameters_of(o.remove("parameters"), &format!("{at}.parameters"))?;
    let binary = match params.get("binary_data") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => {
            return Err(field(
                &format!("{at}.parameters.binary_data"),
                "must be true or false",
            ));
        }
    };
    Ok(Wanted { name, binary })
}

/// One input, its binary data (if any) taken from the front of `binary`.
fn input(index: usize, v: Value, binary: &mut Option<&[u8]>) -> Result<Tensor, TensorError> {
    let at = format!("inputs[{index}]");
    let Value::Object(mut o) = v else {
        return Err(field(
            &at,
            "must be an object {\"name\", \"shape\", \"datatype\", \"data\"}",
        ));
    };
    let Some(Value::String(name)) = o.remove("name") else {
        return Err(field(&format!("{at}.name"), "must be a string"));
    };
    let datatype = match o.remove("datatype") {
        Some(Value::String(d)) => {
            DataType::parse(&d).ok_or(TensorError::Datatype { index, given: d })?
        }
        _ => {
            return Err(field(
                &format!("{at}.datatype"),
                "must be a string such as \"FP32\", \"UINT8\" or \"BYTES\"",
            ));
        }
    };
    let shape = shape_of(&at, o.remove("shape"))?;
    let elements = shape
        .iter()
        .try_fold(1u64, |n, &d| n.checked_mul(d))
        .ok_or_else(|| TensorError::ShapeOverflow {
            input: name.clone(),
            shape: shape.clone(),
        })?;
    let params = parameters_of(o.remove("parameters"), &format!("{at}.parameters"))?;
    let size = match params.get("binary_data_size") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_u64().ok_or_else(|| {
            field(
                &format!("{at}.parameters.binary_data_size"),
                "must be a whole number of bytes, 0 or more",
            )
        })?),
    };
    let t = Tensor {
        name,
        datatype,
        shape,
        data: Data::Fixed(Vec::new()),
    };
    let data = match (o.remove("data"), size) {
        (Some(_), Some(_)) => return Err(TensorError::Both(t.name)),
        (None, None) => return Err(TensorError::NoData(t.name)),
        (Some(data), None) => json_data(&t, elements, &data)?,
        (None, Some(size)) => {
            let Some(rest) = binary.as_mut() else {
                return Err(TensorError::NoHeader(t.name));
            };
            let at = usize::try_from(size)
                .ok()
                .filter(|&n| n <= rest.len())
                .ok_or(TensorError::PastEnd {
                    input: t.name.clone(),
                    size,
                    left: rest.len(),
                })?;
            // Copied out of the borrow so the rest keeps the body's lifetime.
            let whole: &[u8] = rest;
            let (mine, after) = whole.split_at(at);
            *rest = after;
            binary_data(&t, elements, mine)?
        }
    };
    Ok(Tensor { data, ..t })
}

fn shape_of(at: &str, v: Option<Value>) -> Result<Vec<u64>, TensorError> {
    let bad = || {
        field(
            &format!("{at}.shape"),
            "must be an array of whole numbers, each 0 or more (e.g. [480, 640, 3])",
        )
    };
    let Some(Value::Array(dims)) = v else {
        return Err(bad());
    };
    dims.iter().map(|d| d.as_u64().ok_or_else(bad)).collect()
}

/// The elements of `data` (nested or flat, row-major) as `t`'s datatype.
fn json_data(t: &Tensor, elements: u64, data: &Value) -> Result<Data, TensorError> {
    let mut flat = Vec::new();
    flatten(data, &mut flat);
    if flat.len() as u64 != elements {
        return Err(TensorError::Count {
            input: t.name.clone(),
            shape: t.shape.clone(),
            want: elements,
            given: flat.len() as u64,
        });
    }
    let bad = |index: usize, v: &Value| TensorError::Element {
        input: t.name.clone(),
        index,
        given: shorten(v),
        datatype: t.datatype.as_str(),
    };
    if t.datatype == DataType::Bytes {
        return flat
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_str()
                    .map(|s| s.as_bytes().to_vec())
                    .ok_or_else(|| bad(i, v))
            })
            .collect::<Result<_, _>>()
            .map(Data::Bytes);
    }
    let size = t.datatype.size().unwrap_or(1);
    let mut out = Vec::with_capacity(flat.len().saturating_mul(size));
    for (i, v) in flat.iter().enumerate() {
        put_json(t.datatype, v, &mut out)
            .ok_or_else(|| bad(i, v))
            .map_err(|e| match t.datatype {
                DataType::F16 | DataType::Bf16 => TensorError::HalfInJson(t.name.clone()),
                _ => e,
            })?;
    }
    Ok(Data::Fixed(out))
}

/// Appends `v` as `datatype` in little-endian; `None` if it is no such value.
fn put_json(datatype: DataType, v: &Value, out: &mut Vec<u8>) -> Option<()> {
    fn int<T: TryFrom<i64> + TryFrom<u64>>(v: &Value) -> Option<T> {
        match (v.as_i64(), v.as_u64()) {
            (Some(i), _) => <T as TryFrom<i64>>::try_from(i).ok(),
            (None, Some(u)) => <T as TryFrom<u64>>::try_from(u).ok(),
            _ => None,
        }
    }
    match datatype {
        DataType::Bool => out.push(u8::from(v.as_bool()?)),
        DataType::U8 => out.push(int::<u8>(v)?),
        DataType::I8 => out.extend(int::<i8>(v)?.to_le_bytes()),
        DataType::U16 => out.extend(int::<u16>(v)?.to_le_bytes()),
        DataType::I16 => out.extend(int::<i16>(v)?.to_le_bytes()),
        DataType::U32 => out.extend(int::<u32>(v)?.to_le_bytes()),
        DataType::I32 => out.extend(int::<i32>(v)?.to_le_bytes()),
        DataType::U64 => out.extend(int::<u64>(v)?.to_le_bytes()),
        DataType::I64 => out.extend(int::<i64>(v)?.to_le_bytes()),
        // A JSON number beyond f32's range becomes infinity, which no model wants.
        DataType::F32 => out.extend(
            Some(v.as_f64()? as f32)
                .filter(|f| f.is_finite())?
                .to_le_bytes(),
        ),
        DataType::F64 => out.extend(v.as_f64()?.to_le_bytes()),
        DataType::F16 | DataType::Bf16 | DataType::Bytes => return None,
    }
    Some(())
}

/// A JSON value as an error message shows it: at most 40 characters.
fn shorten(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(40) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s,
    }
}

/// `bytes` as `t`'s binary data: elements × size bytes, or `BYTES` elements each with its
/// length, exactly as many as the shape holds.
fn binary_data(t: &Tensor, elements: u64, bytes: &[u8]) -> Result<Data, TensorError> {
    if let Some(size) = t.datatype.size() {
        let want = elements.checked_mul(size as u64);
        if want != Some(bytes.len() as u64) {
            return Err(TensorError::BinarySize {
                input: t.name.clone(),
                datatype: t.datatype.as_str(),
                shape: t.shape.clone(),
                want: want.map_or_else(|| "more than 2^64".into(), |w| w.to_string()),
                given: bytes.len() as u64,
            });
        }
        return Ok(Data::Fixed(bytes.to_vec()));
    }
    let count = |given: u64| TensorError::Count {
        input: t.name.clone(),
        shape: t.shape.clone(),
        want: elements,
        given,
    };
    let mut rest = bytes;
    let mut out = Vec::new();
    // Each element takes at least its 4-byte length, so the loop ends within the data
    // whatever the shape declares.
    while !rest.is_empty() {
        let index = out.len() as u64;
        if index >= elements {
            return Err(count(index + 1));
        }
        let Some((len, after)) = rest.split_first_chunk::<4>() else {
            return Err(TensorError::BytesPastEnd {
                input: t.name.clone(),
                index,
                len: 4,
                left: rest.len(),
            });
        };
        let len = u32::from_le_bytes(*len);
        let n = usize::try_from(len)
            .ok()
            .filter(|&n| n <= after.len())
            .ok_or(TensorError::BytesPastEnd {
                input: t.name.clone(),
                index,
                len: u64::from(len),
                left: after.len(),
            })?;
        let (element, next) = after.split_at(n);
        out.push(element.to_vec());
        rest = next;
    }
    if out.len() as u64 != elements {
        return Err(count(out.len() as u64));
    }
    Ok(Data::Bytes(out))
}

/// An output tensor's elements.
#[derive(Debug, Clone, PartialEq)]
pub enum OutData {
    /// `FP32`.
    F32(Vec<f32>),
    /// `BYTES` (text here: always UTF-8).
    Bytes(Vec<String>),
}

/// An output tensor of an answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    /// Its name.
    pub name: std::borrow::Cow<'static, str>,
    /// Its shape.
    pub shape: Vec<u64>,
    /// Its elements.
    pub data: OutData,
}

impl Output {
    fn datatype(&self) -> DataType {
        match self.data {
            OutData::F32(_) => DataType::F32,
            OutData::Bytes(_) => DataType::Bytes,
        }
    }

    fn binary(&self) -> Vec<u8> {
        match &self.data {
            OutData::F32(v) => v.iter().flat_map(|f| f.to_le_bytes()).collect(),
            OutData::Bytes(v) => {
                let mut out = Vec::new();
                for s in v {
                    // Output strings are far below 4 GiB (a transcript, an answer).
                    out.extend(u32::try_from(s.len()).unwrap_or(u32::MAX).to_le_bytes());
                    out.extend(s.as_bytes());
                }
                out
            }
        }
    }

    fn json_data(&self) -> Value {
        match &self.data {
            OutData::F32(v) => v.iter().map(|&f| Value::from(f64::from(f))).collect(),
            OutData::Bytes(v) => v.iter().map(|s| Value::from(s.as_str())).collect(),
        }
    }
}

/// An answer's body: `head` (`model_name`, `id`, `parameters`, …) with `outputs` added,
/// each as JSON data or — where `binary` says — binary data after the JSON. Returns the
/// body and, when any output is binary, the JSON header's length (the
/// `Inference-Header-Content-Length` of the answer).
pub fn encode_answer(
    mut head: Map<String, Value>,
    outputs: &[(Output, bool)],
) -> (Vec<u8>, Option<usize>) {
    let mut tail = Vec::new();
    let mut listed = Vec::with_capacity(outputs.len());
    for (o, binary) in outputs {
        let mut entry = Map::new();
        entry.insert("name".into(), o.name.to_string().into());
        entry.insert("datatype".into(), o.datatype().as_str().into());
        entry.insert("shape".into(), o.shape.clone().into());
        if *binary {
            let bytes = o.binary();
            entry.insert(
                "parameters".into(),
                serde_json::json!({"binary_data_size": bytes.len()}),
            );
            tail.extend(bytes);
        } else {
            entry.insert("data".into(), o.json_data());
        }
        listed.push(Value::Object(entry));
    }
    head.insert("outputs".into(), Value::Array(listed));
    let mut body = Value::Object(head).to_string().into_bytes();
    if outputs.iter().any(|(_, b)| *b) {
        let json_len = body.len();
        body.extend(tail);
        (body, Some(json_len))
    } else {
        (body, None)
    }
}

#[cfg(test)]
#[path = "tensor_tests.rs"]
mod tests;
