//! Scenes to render: a folder of OBJ meshes or a generated point cloud (`points:N[:seed]`),
//! the camera, and how a scene is split across ranks. Scene files are read with the checks
//! docs/formats.md lists (regular files only, bounded, finite coordinates).
//!
//! The split keeps draw order: rank r gets the r-th contiguous chunk of the scene's
//! primitives (points sorted by longitude, as the paper splits its GPS cloud by longitude;
//! mesh triangles in file-name order). A single process draws the same primitives in the
//! same order, and its depth test (LESS) keeps the first-drawn fragment on equal depths,
//! which is the fragment of the lowest rank. So z-buffer compositing with ties going to the
//! lower rank reproduces the single-process image exactly.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use glam::{Mat4, Vec3};
use rand::{Rng, SeedableRng};

use crate::error::{CompositeError, Result};

/// One mesh vertex as the mesh shader reads it (std430 `Vertex`).
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct MeshVertex {
    pub pos: [f32; 3],
    pub color: u32,
    pub normal: [f32; 3],
    pub pad: f32,
}

/// The primitives of a scene or of one rank's share of it.
#[derive(Clone, Debug)]
pub enum Geometry {
    /// Impostor spheres: centre xyz + radius, and RGBA8 colours.
    Points { spheres: Vec<[f32; 4]>, colors: Vec<u32> },
    /// Triangles, three vertices each.
    Mesh { vertices: Vec<MeshVertex> },
}

impl Geometry {
    /// Number of primitives (points or triangles).
    pub fn primitives(&self) -> usize {
        match self {
            Geometry::Points { spheres, .. } => spheres.len(),
            Geometry::Mesh { vertices } => vertices.len() / 3,
        }
    }

    /// The contiguous chunk of primitives rank `rank` of `ranks` draws.
    pub fn share(&self, rank: usize, ranks: usize) -> Geometry {
        let n = self.primitives();
        let (a, b) = (n * rank / ranks, n * (rank + 1) / ranks);
        match self {
            Geometry::Points { spheres, colors } => {
                Geometry::Points { spheres: spheres[a..b].to_vec(), colors: colors[a..b].to_vec() }
            }
            Geometry::Mesh { vertices } => Geometry::Mesh { vertices: vertices[3 * a..3 * b].to_vec() },
        }
    }
}

/// A whole scene: its geometry and the sphere that bounds it (for the camera).
#[derive(Clone, Debug)]
pub struct Scene {
    pub geometry: Geometry,
    pub center: Vec3,
    pub radius: f32,
}

/// What `--scene` names: a generated point cloud or a folder of `.obj` files. Parsed when
/// the command line is (a malformed `points:` spec is a usage error).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SceneSpec {
    /// `points:N[:seed]`: N >= 1 points from the seeded generator.
    Points { count: usize, seed: u64 },
    /// A folder of `.obj` files.
    Folder(PathBuf),
}

impl FromStr for SceneSpec {
    type Err = String;

    fn from_str(spec: &str) -> std::result::Result<SceneSpec, String> {
        let Some(rest) = spec.strip_prefix("points:") else { return Ok(SceneSpec::Folder(PathBuf::from(spec))) };
        let bad = || format!("{spec:?}: expected points:N[:seed] with N a whole number >= 1 and seed a whole number");
        let mut parts = rest.split(':');
        let count: usize = parts.next().and_then(|s| s.parse().ok()).filter(|&n| n > 0).ok_or_else(bad)?;
        let seed = match parts.next() {
            Some(s) => s.parse().map_err(|_| bad())?,
            None => 1,
        };
        if parts.next().is_some() {
            return Err(bad());
        }
        Ok(SceneSpec::Points { count, seed })
    }
}

impl std::fmt::Display for SceneSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SceneSpec::Points { count, seed } => write!(f, "points:{count}:{seed}"),
            SceneSpec::Folder(dir) => write!(f, "{}", dir.display()),
        }
    }
}

/// Host bytes one generated point takes while the cloud is built (the sort key, sphere and
/// colour, then the sphere and colour planes), checked against the budget first.
const POINT_BYTES: u64 = 24 + 16 + 4;
/// Host bytes of one mesh vertex as uploaded.
const VERTEX_BYTES: u64 = std::mem::size_of::<MeshVertex>() as u64;

impl Scene {
    /// Builds the scene `spec` names.
    pub fn load(spec: &SceneSpec) -> Result<Scene> {
        match spec {
            SceneSpec::Points { count, seed } => Scene::points(*count, *seed),
            SceneSpec::Folder(dir) => Scene::obj_folder(dir),
        }
    }

    /// A GPS-like cloud: `n` points on a unit globe, clustered around seeded "cities", sorted
    /// by longitude, coloured and sized by cluster. `n` is checked against the memory budget
    /// before anything is allocated.
    pub fn points(n: usize, seed: u64) -> Result<Scene> {
        kit::budget::elements(&[n as u64], POINT_BYTES, &format!("a cloud of {n} points"))?;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let clusters: Vec<(Vec3, f32, u32)> = (0..48)
            .map(|_| {
                let dir = random_unit(&mut rng);
                let spread = rng.gen_range(0.05f32..0.35);
                let hue = rng.gen_range(0.0f32..1.0);
                (dir, spread, crate::ap::pack_rgba(heat(hue)))
            })
            .collect();
        let radius = 0.9 * (4.0 * std::f32::consts::PI / n as f32).sqrt().clamp(0.0005, 0.05);
        let mut pts: Vec<(f32, [f32; 4], u32)> = (0..n)
            .map(|_| {
                let (c, spread, color) = clusters[rng.gen_range(0..clusters.len())];
                let offset = Vec3::new(gauss(&mut rng), gauss(&mut rng), gauss(&mut rng)) * spread;
                let p = (c + offset).normalize_or(c);
                let lon = p.z.atan2(p.x);
                (lon, [p.x, p.y, p.z, radius], color)
            })
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        Ok(Scene {
            geometry: Geometry::Points {
                spheres: pts.iter().map(|p| p.1).collect(),
                colors: pts.iter().map(|p| p.2).collect(),
            },
            center: Vec3::ZERO,
            radius: 1.0 + radius,
        })
    }

    /// Every `.obj` file of a folder, in file-name order, each in its own colour. Only
    /// regular files are read, each of at most [`obj_limit`] bytes and within the budget;
    /// material libraries (`mtllib`) are never opened, since each file's colour is its own;
    /// every vertex position and normal must be finite and the scene's extent must fit f32.
    pub fn obj_folder(dir: &Path) -> Result<Scene> {
        let entries = std::fs::read_dir(dir).map_err(|e| {
            CompositeError::Scene(format!("{}: {e} (expected a folder of .obj files or points:N)", dir.display()))
        })?;
        let mut files: Vec<_> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x.eq_ignore_ascii_case("obj")))
            .collect();
        files.sort();
        if files.is_empty() {
            return Err(CompositeError::Scene(format!("{}: no .obj files", dir.display())));
        }
        let mut vertices = Vec::new();
        for (k, file) in files.iter().enumerate() {
            let color = crate::ap::pack_rgba(heat((k as f32 * 0.618_034).fract()));
            append_obj(file, color, &mut vertices)?;
        }
        if vertices.is_empty() {
            return Err(CompositeError::Scene(format!("{}: the .obj files hold no triangles", dir.display())));
        }
        let (lo, hi) = vertices.iter().fold((Vec3::splat(f32::MAX), Vec3::splat(f32::MIN)), |(lo, hi), v| {
            let p = Vec3::from_array(v.pos);
            (lo.min(p), hi.max(p))
        });
        let (center, radius) = ((lo + hi) * 0.5, (hi - lo).length() * 0.5);
        if !(center.is_finite() && radius.is_finite()) {
            return Err(CompositeError::Scene(format!(
                "{}: the scene's extent ({lo} to {hi}) is too large for f32",
                dir.display()
            )));
        }
        Ok(Scene { geometry: Geometry::Mesh { vertices }, center, radius: radius.max(1e-6) })
    }

    /// View and projection for `frame`: the camera circles the scene by 2 degrees a frame,
    /// looking at its centre from 2.6 bounding radii, slightly from above. Vulkan clip space
    /// (depth 0..1, y down so row 0 is the top).
    pub fn camera(&self, frame: u32, width: u32, height: u32) -> (Mat4, Mat4) {
        let angle = (frame as f32 * 2.0 + 30.0).to_radians();
        let dist = 2.6 * self.radius;
        let eye = self.center + Vec3::new(angle.cos() * dist, 0.35 * dist, angle.sin() * dist);
        let near = (dist - 1.5 * self.radius).max(dist * 0.01);
        let far = dist + 1.5 * self.radius;
        (look_at(eye, self.center, Vec3::Y), perspective(45f32.to_radians(), width as f32 / height as f32, near, far))
    }
}

/// The largest `.obj` file read: the memory budget (the parsed mesh is checked separately).
pub fn obj_limit() -> u64 {
    kit::budget::get()
}

/// Reads one `.obj` file (bounded, regular files only) and appends its triangles in `color`.
fn append_obj(file: &Path, color: u32, vertices: &mut Vec<MeshVertex>) -> Result<()> {
    let bad = |m: String| CompositeError::Scene(format!("{}: {m}", file.display()));
    let bytes = kit::input::read_bounded(file, obj_limit())?;
    let options = tobj::LoadOptions { triangulate: true, single_index: true, ..Default::default() };
    // Materials are not used (each file has its own colour), so no `mtllib` file is opened:
    // a material library cannot be a FIFO, a device or a huge file that the scene waits on.
    let (models, _) =
        tobj::load_obj_buf(&mut &bytes[..], &options, |_| Ok(Default::default())).map_err(|e| bad(e.to_string()))?;
    drop(bytes);
    for m in models {
        let mesh = &m.mesh;
        if let Some(i) = mesh.positions.iter().chain(&mesh.normals).position(|v| !v.is_finite()) {
            return Err(bad(format!("coordinate {i} of the mesh {:?} is not finite", m.name)));
        }
        let total = vertices.len() as u64 + mesh.indices.len() as u64;
        kit::budget::elements(&[total], VERTEX_BYTES, &format!("the {total} vertices of the scene"))?;
        vertices.reserve(mesh.indices.len());
        let pos = |i: u32| Vec3::from_slice(&mesh.positions[3 * i as usize..3 * i as usize + 3]);
        for tri in mesh.indices.chunks_exact(3) {
            if tri.iter().any(|&i| 3 * i as usize + 3 > mesh.positions.len()) {
                return Err(bad("vertex index out of range".into()));
            }
            let face = (pos(tri[1]) - pos(tri[0])).cross(pos(tri[2]) - pos(tri[0])).normalize_or_zero();
            for &i in tri {
                let normal = if mesh.normals.len() >= 3 * i as usize + 3 {
                    Vec3::from_slice(&mesh.normals[3 * i as usize..3 * i as usize + 3])
                } else {
                    face
                };
                vertices.push(MeshVertex { pos: pos(i).to_array(), color, normal: normal.to_array(), pad: 0.0 });
            }
        }
    }
    Ok(())
}

/// Right-handed view matrix (camera looks down -z).
fn look_at(eye: Vec3, target: Vec3, up: Vec3) -> Mat4 {
    let f = (target - eye).normalize();
    let s = f.cross(up).normalize();
    let u = s.cross(f);
    Mat4::from_cols(
        glam::Vec4::new(s.x, u.x, -f.x, 0.0),
        glam::Vec4::new(s.y, u.y, -f.y, 0.0),
        glam::Vec4::new(s.z, u.z, -f.z, 0.0),
        glam::Vec4::new(-s.dot(eye), -u.dot(eye), f.dot(eye), 1.0),
    )
}

/// Right-handed perspective projection to Vulkan clip space: depth 0 at `near`, 1 at `far`,
/// y pointing down.
fn perspective(fov_y: f32, aspect: f32, near: f32, far: f32) -> Mat4 {
    let h = 1.0 / (0.5 * fov_y).tan();
    let r = far / (near - far);
    Mat4::from_cols(
        glam::Vec4::new(h / aspect, 0.0, 0.0, 0.0),
        glam::Vec4::new(0.0, -h, 0.0, 0.0),
        glam::Vec4::new(0.0, 0.0, r, -1.0),
        glam::Vec4::new(0.0, 0.0, r * near, 0.0),
    )
}

fn random_unit(rng: &mut impl Rng) -> Vec3 {
    loop {
        let v = Vec3::new(rng.gen_range(-1.0..1.0), rng.gen_range(-1.0..1.0), rng.gen_range(-1.0..1.0));
        let l = v.length();
        if l > 0.1 && l <= 1.0 {
            return v / l;
        }
    }
}

/// A standard normal sample (Box-Muller).
fn gauss(rng: &mut impl Rng) -> f32 {
    let u: f32 = rng.gen_range(f32::EPSILON..1.0);
    let v: f32 = rng.gen_range(0.0..1.0);
    (-2.0 * u.ln()).sqrt() * (std::f32::consts::TAU * v).cos()
}

/// A warm-to-cool colour ramp, opaque.
fn heat(t: f32) -> [u8; 4] {
    let c = |x: f32| (x.clamp(0.0, 1.0) * 255.0).round() as u8;
    [c(1.5 - (2.0 * t - 1.5).abs() * 1.2), c(1.2 - (2.0 * t - 1.0).abs()), c(1.5 - (2.0 * t - 0.5).abs() * 1.2), 255]
}
