//! What a compute shader's SPIR-V says about its interface and shape: its storage-buffer
//! bindings with their names and whether the shader reads or writes them, the push-constant
//! bytes, the workgroup size (and which specialization constants set it), its other
//! specialization constants, and the shared memory a workgroup takes.
//!
//! This one file is compiled twice: by `tessera-shader-build`, which reflects every kernel at
//! build time into the descriptor the engine creates pipelines from, and by the engine
//! (`engine::reflect`), where `sweep` reflects a kernel under the specialization constants it
//! tunes (shared memory depends on them).

use std::collections::HashMap;

/// How a shader uses one binding: it reads it, writes it, or both (from the `readonly` and
/// `writeonly` qualifiers, which SPIR-V carries as NonWritable and NonReadable).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Usage {
    pub read: bool,
    pub write: bool,
}

/// One binding at set 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReflectedBinding {
    pub binding: u32,
    /// The block's instance name, else its type name (`Input` in
    /// `readonly buffer Input { .. };`); variables aliasing one binding join theirs with `/`.
    pub name: String,
    pub usage: Usage,
    /// A uniform block rather than a storage buffer.
    pub uniform: bool,
}

/// A specialization constant: its id, its name in the source, its default value (as bits).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReflectedSpec {
    pub id: u32,
    pub name: String,
    pub default: u32,
}

/// A shader's interface and shape under given specialization constants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reflection {
    pub workgroup: [u32; 3],
    /// The specialization constant that sets each workgroup axis, where one does.
    pub workgroup_spec: [Option<u32>; 3],
    /// Bytes of `shared` variables (arrays of vec3 padded to 16 bytes per element).
    pub shared_bytes: u32,
    /// The bindings at set 0, by binding number.
    pub bindings: Vec<ReflectedBinding>,
    pub push_bytes: u32,
    /// Specialization constants by id.
    pub spec_constants: Vec<ReflectedSpec>,
}

impl Reflection {
    pub fn threads(&self) -> u32 {
        self.workgroup.iter().product()
    }

    /// One past the highest binding number (0 without bindings).
    pub fn binding_count(&self) -> u32 {
        self.bindings.last().map_or(0, |b| b.binding + 1)
    }
}

#[derive(Clone, Debug)]
enum Type {
    Scalar(u32),
    Vector(u32, u32),
    Array(u32, u32),
    RuntimeArray,
    Struct(Vec<u32>),
    /// The pointee type (the storage class is the variable's).
    Pointer(u32),
}

const OP_NAME: u32 = 5;
const OP_EXECUTION_MODE: u32 = 16;
const OP_EXECUTION_MODE_ID: u32 = 331;
const OP_TYPE_BOOL: u32 = 20;
const OP_TYPE_INT: u32 = 21;
const OP_TYPE_FLOAT: u32 = 22;
const OP_TYPE_VECTOR: u32 = 23;
const OP_TYPE_MATRIX: u32 = 24;
const OP_TYPE_ARRAY: u32 = 28;
const OP_TYPE_RUNTIME_ARRAY: u32 = 29;
const OP_TYPE_STRUCT: u32 = 30;
const OP_TYPE_POINTER: u32 = 32;
const OP_CONSTANT_TRUE: u32 = 41;
const OP_CONSTANT_FALSE: u32 = 42;
const OP_CONSTANT: u32 = 43;
const OP_SPEC_CONSTANT_TRUE: u32 = 48;
const OP_SPEC_CONSTANT_FALSE: u32 = 49;
const OP_SPEC_CONSTANT: u32 = 50;
const OP_SPEC_CONSTANT_COMPOSITE: u32 = 51;
const OP_SPEC_CONSTANT_OP: u32 = 52;
const OP_VARIABLE: u32 = 59;
const OP_COMPOSITE_EXTRACT: u32 = 81;
const OP_DECORATE: u32 = 71;
const OP_MEMBER_DECORATE: u32 = 72;

const DECORATION_SPEC_ID: u32 = 1;
const DECORATION_BUILTIN: u32 = 11;
const DECORATION_NON_WRITABLE: u32 = 24;
const DECORATION_NON_READABLE: u32 = 25;
const DECORATION_DESCRIPTOR_SET: u32 = 34;
const DECORATION_BINDING: u32 = 33;
const DECORATION_OFFSET: u32 = 35;
const BUILTIN_WORKGROUP_SIZE: u32 = 25;
const EXECUTION_MODE_LOCAL_SIZE: u32 = 17;
const EXECUTION_MODE_LOCAL_SIZE_ID: u32 = 38;
const STORAGE_UNIFORM: u32 = 2;
const STORAGE_WORKGROUP: u32 = 4;
const STORAGE_PUSH_CONSTANT: u32 = 9;
const STORAGE_BUFFER: u32 = 12;

/// The value of an OpSpecConstantOp over integer constants (the operations glslang emits
/// for sizes computed from specialization constants).
fn spec_op(op: u32, a: u64, b: u64, c: u64) -> Option<u64> {
    Some(match op {
        128 => a.wrapping_add(b),
        130 => a.wrapping_sub(b),
        132 => a.wrapping_mul(b),
        134 | 135 => a.checked_div(b)?,
        137 | 139 => a.checked_rem(b)?,
        194 | 195 => a >> (b & 63),
        196 => a << (b & 63),
        169 => {
            if a != 0 {
                b
            } else {
                c
            }
        }
        170 => (a == b) as u64,
        171 => (a != b) as u64,
        172 | 173 => (a > b) as u64,
        174 | 175 => (a >= b) as u64,
        176 | 177 => (a < b) as u64,
        178 | 179 => (a <= b) as u64,
        166 => (a != 0 && b != 0) as u64,
        167 => (a != 0 || b != 0) as u64,
        199 => a | b,
        200 => a ^ b,
        201 => a & b,
        113 | 114 | 116 => a,
        _ => return None,
    })
}

/// A literal string of SPIR-V words (UTF-8, NUL-terminated).
fn literal_string(words: &[u32]) -> String {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).take_while(|&b| b != 0).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// What the decorations say about one id.
#[derive(Default)]
struct Decorations {
    spec_id: Option<u32>,
    binding: Option<u32>,
    set: Option<u32>,
    non_writable: bool,
    non_readable: bool,
}

/// Reflects `spirv` with specialization constant `i` set to `spec[i]` (where given).
pub fn reflect(spirv: &[u8], spec: &[u32]) -> Result<Reflection, String> {
    if !spirv.len().is_multiple_of(4) || spirv.len() < 20 {
        return Err("SPIR-V length is not a whole number of words".into());
    }
    let words: Vec<u32> = spirv.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    if words[0] != 0x0723_0203 {
        return Err("not SPIR-V (bad magic number)".into());
    }
    let mut names: HashMap<u32, String> = HashMap::new();
    let mut decorations: HashMap<u32, Decorations> = HashMap::new();
    // Struct members' NonWritable / NonReadable: (struct, member) -> (non_writable, non_readable).
    let mut member_access: HashMap<u32, Vec<(bool, bool)>> = HashMap::new();
    let mut builtin_size: Option<u32> = None;
    let mut offsets: HashMap<(u32, u32), u32> = HashMap::new();
    let mut types: HashMap<u32, Type> = HashMap::new();
    let mut values: HashMap<u32, u64> = HashMap::new();
    let mut spec_defaults: Vec<(u32, u32)> = Vec::new();
    let mut composites: HashMap<u32, Vec<u32>> = HashMap::new();
    let mut local_size = [1u32; 3];
    // LocalSizeId (SPIR-V 1.6) names constants defined later in the module.
    let mut local_size_ids: Option<[u32; 3]> = None;
    let mut variables: Vec<(u32, u32, u32)> = Vec::new();
    let mut at = 5;
    while at < words.len() {
        let (count, op) = ((words[at] >> 16) as usize, words[at] & 0xffff);
        if count == 0 || at + count > words.len() {
            return Err("truncated SPIR-V instruction".into());
        }
        let w = &words[at + 1..at + count];
        let arg = |i: usize| w.get(i).copied().unwrap_or(0);
        match op {
            OP_NAME if !w.is_empty() => {
                names.insert(arg(0), literal_string(&w[1..]));
            }
            OP_EXECUTION_MODE if arg(1) == EXECUTION_MODE_LOCAL_SIZE => local_size = [arg(2), arg(3), arg(4)],
            OP_EXECUTION_MODE_ID if arg(1) == EXECUTION_MODE_LOCAL_SIZE_ID => {
                local_size_ids = Some([arg(2), arg(3), arg(4)])
            }
            OP_DECORATE => {
                let d = decorations.entry(arg(0)).or_default();
                match arg(1) {
                    DECORATION_SPEC_ID => d.spec_id = Some(arg(2)),
                    DECORATION_BUILTIN if arg(2) == BUILTIN_WORKGROUP_SIZE => builtin_size = Some(arg(0)),
                    DECORATION_BINDING => d.binding = Some(arg(2)),
                    DECORATION_DESCRIPTOR_SET => d.set = Some(arg(2)),
                    DECORATION_NON_WRITABLE => d.non_writable = true,
                    DECORATION_NON_READABLE => d.non_readable = true,
                    _ => {}
                }
            }
            OP_MEMBER_DECORATE => {
                let member = arg(1) as usize;
                let flags = member_access.entry(arg(0)).or_default();
                if flags.len() <= member {
                    flags.resize(member + 1, (false, false));
                }
                match arg(2) {
                    DECORATION_OFFSET => {
                        offsets.insert((arg(0), arg(1)), arg(3));
                    }
                    DECORATION_NON_WRITABLE => flags[member].0 = true,
                    DECORATION_NON_READABLE => flags[member].1 = true,
                    _ => {}
                }
            }
            OP_TYPE_BOOL => {
                types.insert(arg(0), Type::Scalar(4));
            }
            OP_TYPE_INT | OP_TYPE_FLOAT => {
                types.insert(arg(0), Type::Scalar(arg(1) / 8));
            }
            OP_TYPE_VECTOR | OP_TYPE_MATRIX => {
                types.insert(arg(0), Type::Vector(arg(1), arg(2)));
            }
            OP_TYPE_ARRAY => {
                types.insert(arg(0), Type::Array(arg(1), arg(2)));
            }
            OP_TYPE_RUNTIME_ARRAY => {
                types.insert(arg(0), Type::RuntimeArray);
            }
            OP_TYPE_STRUCT => {
                types.insert(arg(0), Type::Struct(w[1..].to_vec()));
            }
            OP_TYPE_POINTER => {
                types.insert(arg(0), Type::Pointer(arg(2)));
            }
            OP_CONSTANT | OP_SPEC_CONSTANT => {
                let id = arg(1);
                let spec_id = decorations.get(&id).and_then(|d| d.spec_id);
                let value = match (op, spec_id) {
                    (OP_SPEC_CONSTANT, Some(sid)) => {
                        spec_defaults.push((id, arg(2)));
                        spec.get(sid as usize).copied().unwrap_or(arg(2))
                    }
                    _ => arg(2),
                };
                values.insert(id, value as u64);
            }
            OP_CONSTANT_TRUE | OP_CONSTANT_FALSE | OP_SPEC_CONSTANT_TRUE | OP_SPEC_CONSTANT_FALSE => {
                let id = arg(1);
                let default = (op == OP_CONSTANT_TRUE || op == OP_SPEC_CONSTANT_TRUE) as u32;
                let spec_id = decorations.get(&id).and_then(|d| d.spec_id);
                if let (OP_SPEC_CONSTANT_TRUE | OP_SPEC_CONSTANT_FALSE, Some(_)) = (op, spec_id) {
                    spec_defaults.push((id, default));
                }
                let given = spec_id.and_then(|sid| spec.get(sid as usize)).copied();
                values.insert(id, u64::from(given.unwrap_or(default) != 0));
            }
            OP_SPEC_CONSTANT_COMPOSITE => {
                composites.insert(arg(1), w[2..].to_vec());
            }
            // CompositeExtract's index is a literal: gl_WorkGroupSize.x in array sizes.
            OP_SPEC_CONSTANT_OP if arg(2) == OP_COMPOSITE_EXTRACT => {
                let part = composites.get(&arg(3)).and_then(|parts| parts.get(arg(4) as usize));
                if let Some(v) = part.and_then(|id| values.get(id)).copied() {
                    values.insert(arg(1), v);
                }
            }
            OP_SPEC_CONSTANT_OP => {
                let get = |i: usize| w.get(i).and_then(|id| values.get(id)).copied().unwrap_or(0);
                if let Some(v) = spec_op(arg(2), get(3), get(4), get(5)) {
                    values.insert(arg(1), v);
                }
            }
            OP_VARIABLE => variables.push((arg(0), arg(1), arg(2))),
            _ => {}
        }
        at += count;
    }
    let size_of = |ty: u32| type_size(ty, &types, &values, &offsets, 0);
    let mut shared = 0u64;
    let mut push = 0u64;
    let mut bindings: Vec<ReflectedBinding> = Vec::new();
    for &(ptr_type, id, storage) in &variables {
        let Some(Type::Pointer(pointee)) = types.get(&ptr_type) else { continue };
        match storage {
            STORAGE_WORKGROUP => shared += size_of(*pointee)?,
            STORAGE_PUSH_CONSTANT => push = push.max(size_of(*pointee)?),
            STORAGE_BUFFER | STORAGE_UNIFORM => {
                let Some(d) = decorations.get(&id) else { continue };
                let Some(binding) = d.binding else { continue };
                if d.set.unwrap_or(0) != 0 {
                    return Err(format!(
                        "binding {binding} is in descriptor set {}; kernels use set 0",
                        d.set.unwrap()
                    ));
                }
                // A block is read-only (write-only) when the variable or every member says so.
                let members = member_access.get(pointee).map(Vec::as_slice).unwrap_or(&[]);
                let member_count = match types.get(pointee) {
                    Some(Type::Struct(m)) => m.len(),
                    _ => 0,
                };
                let all = |f: fn(&(bool, bool)) -> bool| {
                    member_count > 0 && members.len() == member_count && members.iter().all(f)
                };
                let usage = Usage {
                    read: !(d.non_readable || all(|m| m.1)),
                    write: storage == STORAGE_BUFFER && !(d.non_writable || all(|m| m.0)),
                };
                let name = match names.get(&id).filter(|n| !n.is_empty()) {
                    Some(n) => n.clone(),
                    None => names.get(pointee).cloned().unwrap_or_default(),
                };
                let uniform = storage == STORAGE_UNIFORM;
                match bindings.iter_mut().find(|b| b.binding == binding) {
                    Some(b) => {
                        b.usage.read |= usage.read;
                        b.usage.write |= usage.write;
                        b.uniform |= uniform;
                        if !b.name.split('/').any(|n| n == name) {
                            b.name = format!("{}/{name}", b.name);
                        }
                    }
                    None => bindings.push(ReflectedBinding { binding, name, usage, uniform }),
                }
            }
            _ => {}
        }
    }
    bindings.sort_by_key(|b| b.binding);
    let value = |id: &u32| values.get(id).copied().unwrap_or(1) as u32;
    let spec_of = |id: &u32| decorations.get(id).and_then(|d| d.spec_id);
    let (workgroup, workgroup_spec) = match (builtin_size.and_then(|id| composites.get(&id)), local_size_ids) {
        (Some(parts), _) if parts.len() == 3 => (
            [value(&parts[0]), value(&parts[1]), value(&parts[2])],
            [spec_of(&parts[0]), spec_of(&parts[1]), spec_of(&parts[2])],
        ),
        (_, Some(ids)) => (ids.map(|id| value(&id)), ids.map(|id| spec_of(&id))),
        _ => (local_size, [None; 3]),
    };
    let mut spec_constants: Vec<ReflectedSpec> = spec_defaults
        .iter()
        .filter_map(|&(id, default)| {
            let sid = spec_of(&id)?;
            Some(ReflectedSpec { id: sid, name: names.get(&id).cloned().unwrap_or_default(), default })
        })
        .collect();
    spec_constants.sort_by_key(|s| s.id);
    spec_constants.dedup_by_key(|s| s.id);
    Ok(Reflection {
        workgroup,
        workgroup_spec,
        shared_bytes: u32::try_from(shared).map_err(|_| "shared memory over 4 GiB".to_string())?,
        bindings,
        push_bytes: (push.div_ceil(4) * 4) as u32,
        spec_constants,
    })
}

/// Bytes of a type: scalars and vectors packed, array elements of 12 bytes padded to 16 (as
/// drivers lay out vec3 arrays), structs by their member offsets where declared.
fn type_size(
    ty: u32,
    types: &HashMap<u32, Type>,
    values: &HashMap<u32, u64>,
    offsets: &HashMap<(u32, u32), u32>,
    depth: u32,
) -> Result<u64, String> {
    if depth > 32 {
        return Err("SPIR-V types nest too deep".into());
    }
    let size = |t| type_size(t, types, values, offsets, depth + 1);
    Ok(match types.get(&ty) {
        Some(Type::Scalar(bytes)) => u64::from(*bytes),
        Some(Type::Vector(component, n)) => size(*component)? * u64::from(*n),
        Some(Type::Array(element, length)) => {
            let element = size(*element)?;
            let stride = if element == 12 { 16 } else { element };
            let n = values.get(length).copied().ok_or("an array length that is not a constant")?;
            stride.checked_mul(n).ok_or("an array over 2^64 bytes")?
        }
        Some(Type::Struct(members)) => {
            let mut end = 0u64;
            let mut packed = 0u64;
            for (i, &m) in members.iter().enumerate() {
                let bytes = size(m)?;
                packed += bytes;
                if let Some(&off) = offsets.get(&(ty, i as u32)) {
                    end = end.max(u64::from(off) + bytes);
                }
            }
            end.max(packed)
        }
        _ => 0,
    })
}
