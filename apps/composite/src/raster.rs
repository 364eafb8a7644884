//! The rasteriser: draws one rank's geometry into an RGBA8 colour and a D32 depth image
//! (cleared to background 0 and depth 1.0) and copies both into device buffers that the ROI
//! and encoding kernels read. Everything goes through the engine's graphics module.

use engine::graphics::{GraphicsPipeline, GraphicsPipelineDesc, Image2D, COLOR_RGBA8, DEPTH_F32};
use engine::{vk, Buffer, Context, Location, Recorder};
use glam::Mat4;

use crate::error::Result;
use crate::scene::Geometry;
use crate::shaders;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct CameraPush {
    view: [f32; 16],
    proj: [f32; 16],
}

/// Geometry uploaded to the device.
pub enum GpuGeometry {
    Points { spheres: Buffer<[f32; 4]>, colors: Buffer<u32>, count: u32 },
    Mesh { vertices: Buffer<crate::scene::MeshVertex>, count: u32 },
}

/// Render targets and pipelines for one image size.
pub struct Rasteriser {
    ctx: Context,
    points: GraphicsPipeline,
    mesh: GraphicsPipeline,
    color_image: Image2D,
    depth_image: Image2D,
    /// The rendered colour (packed RGBA8) and depth planes, row 0 at the top.
    pub color: Buffer<u32>,
    pub depth: Buffer<f32>,
    pub width: u32,
    pub height: u32,
    /// The most bytes one draw binds of a geometry buffer: the device's
    /// maxStorageBufferRange (128 MiB on lavapipe, 8.4 million points).
    draw_bytes: u64,
}

impl Rasteriser {
    pub fn new(ctx: &Context, width: u32, height: u32) -> Result<Rasteriser> {
        let desc = |name, vertex, fragment| GraphicsPipelineDesc {
            name,
            vertex,
            fragment,
            bindings: 0,
            topology: vk::PrimitiveTopology::TRIANGLE_LIST,
            color_format: COLOR_RGBA8,
            depth: Some((DEPTH_F32, vk::CompareOp::LESS)),
            cull: vk::CullModeFlags::NONE,
        };
        let points = ctx.graphics_pipeline_for::<CameraPush>(&GraphicsPipelineDesc {
            bindings: 2,
            ..desc("points", shaders::POINTS_VERT, shaders::POINTS_FRAG)
        })?;
        let mesh = ctx.graphics_pipeline_for::<CameraPush>(&GraphicsPipelineDesc {
            bindings: 1,
            ..desc("mesh", shaders::MESH_VERT, shaders::MESH_FRAG)
        })?;
        let n = width as usize * height as usize;
        Ok(Rasteriser {
            ctx: ctx.clone(),
            points,
            mesh,
            color_image: ctx.image_2d(width, height, COLOR_RGBA8, "colour target")?,
            depth_image: ctx.image_2d(width, height, DEPTH_F32, "depth target")?,
            color: ctx.buffer(n, Location::Device, "rendered colour")?,
            depth: ctx.buffer(n, Location::Device, "rendered depth")?,
            width,
            height,
            draw_bytes: ctx.info().max_storage_buffer_range,
        })
    }

    /// The most elements of `size` bytes one draw binds: within [`Rasteriser::draw_bytes`],
    /// a multiple of `group` elements (3 for triangles), and a multiple of the storage
    /// buffer offset alignment, so that every draw's first element is aligned.
    fn draw_chunk(&self, size: u64, group: u64) -> usize {
        let step = group * self.ctx.info().min_storage_buffer_offset_alignment.max(1);
        let chunk = (self.draw_bytes / size / step).max(1) * step;
        chunk.min(u32::MAX as u64) as usize
    }

    /// Uploads geometry once; it is drawn every frame.
    pub fn upload(&self, geometry: &Geometry) -> Result<GpuGeometry> {
        Ok(match geometry {
            Geometry::Points { spheres, colors } => GpuGeometry::Points {
                spheres: self.ctx.upload(spheres, "point spheres")?,
                colors: self.ctx.upload(colors, "point colours")?,
                count: spheres.len() as u32,
            },
            Geometry::Mesh { vertices } => GpuGeometry::Mesh {
                vertices: self.ctx.upload(vertices, "mesh vertices")?,
                count: vertices.len() as u32,
            },
        })
    }

    /// Records drawing `geometry` with the camera and copying the result into
    /// [`Rasteriser::color`] / [`Rasteriser::depth`] (declared copies: what reads them waits). Geometry larger
    /// than one storage-buffer binding holds is drawn in several draws, in order: the depth
    /// test keeps the first-drawn fragment on equal depths, as with one draw.
    pub fn record(&self, rec: &mut Recorder, geometry: &GpuGeometry, view: Mat4, proj: Mat4) {
        let push = CameraPush { view: view.to_cols_array(), proj: proj.to_cols_array() };
        rec.begin_rendering(&self.color_image, Some(&self.depth_image), [0.0; 4], 1.0);
        match geometry {
            GpuGeometry::Points { spheres, colors, count } => {
                let chunk = self.draw_chunk(std::mem::size_of::<[f32; 4]>() as u64, 1);
                for start in (0..*count as usize).step_by(chunk) {
                    let n = chunk.min(*count as usize - start);
                    let bindings = [spheres.slice(start, n), colors.slice(start, n)];
                    rec.draw(&self.points, &[&bindings[0], &bindings[1]], &push, 6, n as u32);
                }
            }
            GpuGeometry::Mesh { vertices, count } => {
                let chunk = self.draw_chunk(std::mem::size_of::<crate::scene::MeshVertex>() as u64, 3);
                for start in (0..*count as usize).step_by(chunk) {
                    let n = chunk.min(*count as usize - start);
                    rec.draw(&self.mesh, &[&vertices.slice(start, n)], &push, n as u32, 1);
                }
            }
        }
        rec.end_rendering();
        rec.copy_image_to_buffer(&self.color_image, &self.color);
        rec.copy_image_to_buffer(&self.depth_image, &self.depth);
    }

    /// Records reading the rectangle `[x, y, width, height]` of the last rendered colour and
    /// depth images into `color` and `depth` (raw region-of-interest readback).
    pub fn record_rect_readback(&self, rec: &mut Recorder, rect: [u32; 4], color: &Buffer<u32>, depth: &Buffer<f32>) {
        rec.copy_image_rect_to_buffer(&self.color_image, rect, color);
        rec.copy_image_rect_to_buffer(&self.depth_image, rect, depth);
        rec.host_read(color);
        rec.host_read(depth);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::Scene;
    use engine::testing;

    #[test]
    fn rendered_points_encode_identically_on_gpu_and_cpu() {
        let ctx = testing::context();
        let (w, h) = (333, 211);
        let raster = Rasteriser::new(ctx, w, h).unwrap();
        let scene = Scene::points(3000, 5).unwrap();
        let mut enc = crate::gpu::encode::GpuEncoder::new(ctx).unwrap();
        for (rank, ranks) in [(0, 1), (1, 3)] {
            let geometry = raster.upload(&scene.geometry.share(rank, ranks)).unwrap();
            let (view, proj) = scene.camera(0, w, h);
            ctx.run(|rec| {
                raster.record(rec, &geometry, view, proj);
                Ok(())
            })
            .unwrap();
            let frame = crate::frame::Frame {
                width: w,
                height: h,
                color: ctx.download(&raster.color).unwrap(),
                depth: ctx.download(&raster.depth).unwrap(),
            };
            let active = frame.depth.iter().filter(|&&d| d != 1.0).count();
            assert!(active > 500 && active < frame.pixels() * 9 / 10, "rank {rank}: {active} active pixels");
            assert!(frame.depth.iter().all(|&d| (0.0..=1.0).contains(&d)));
            let (got, _, _) = enc.encode(&raster.color, &raster.depth, w, h).unwrap();
            assert_eq!(got, crate::cpu::encode::encode_serial(&frame), "rank {rank} of {ranks}");
        }
        testing::assert_no_validation_messages();
    }

    /// Renders `scene` from frame 0's camera: (colour, depth).
    fn draw(raster: &Rasteriser, scene: &Scene) -> (Vec<u32>, Vec<f32>) {
        let ctx = testing::context();
        let geometry = raster.upload(&scene.geometry).unwrap();
        let (view, proj) = scene.camera(0, raster.width, raster.height);
        ctx.run(|rec| {
            raster.record(rec, &geometry, view, proj);
            Ok(())
        })
        .unwrap();
        (ctx.download(&raster.color).unwrap(), ctx.download(&raster.depth).unwrap())
    }

    #[test]
    fn geometry_over_one_binding_is_drawn_in_several_draws_alike() {
        let ctx = testing::context();
        let mut raster = Rasteriser::new(ctx, 160, 120).unwrap();
        let points = Scene::points(5000, 3).unwrap();
        let obj = tempfile::tempdir().unwrap();
        let grid: String = (0..40)
            .flat_map(|i| {
                let (x, y) = ((i % 8) as f32 * 0.3, (i / 8) as f32 * 0.3);
                [format!("v {x} {y} {}\n", 0.1 * (i % 3) as f32), format!("v {} {y} 0\n", x + 0.5)]
                    .into_iter()
                    .chain([format!("v {x} {} 0.2\n", y + 0.5)])
            })
            .chain((0..40).map(|i| format!("f {} {} {}\n", 3 * i + 1, 3 * i + 2, 3 * i + 3)))
            .collect();
        std::fs::write(obj.path().join("grid.obj"), grid).unwrap();
        let mesh = Scene::obj_folder(obj.path()).unwrap();
        let whole = (draw(&raster, &points), draw(&raster, &mesh));
        // Bindings of a few KiB: dozens of draws, the same images.
        raster.draw_bytes = 4096;
        assert!(raster.draw_chunk(16, 1) < 5000 && raster.draw_chunk(32, 3) < 120);
        assert_eq!(draw(&raster, &points), whole.0, "points drawn in several draws differ");
        assert_eq!(draw(&raster, &mesh), whole.1, "triangles drawn in several draws differ");
        testing::assert_no_validation_messages();
    }

    #[test]
    fn points_beyond_one_storage_binding_draw_within_the_limit() {
        let ctx = testing::context();
        let range = ctx.info().max_storage_buffer_range;
        // Devices of larger ranges (4 GiB on NVIDIA) would need gigabytes of points here.
        if range > 256 << 20 {
            return;
        }
        let raster = Rasteriser::new(ctx, 64, 48).unwrap();
        let scene = Scene::points((range / 16 + 1000) as usize, 1).unwrap();
        let (_, depth) = draw(&raster, &scene);
        assert!(depth.iter().any(|&d| d != 1.0), "nothing drawn");
        testing::assert_no_validation_messages();
    }
}
