//! An image as a model's input tensor: resized (stretched to the input's size, or scaled on
//! its short side and cut at the centre), laid out channels-first or -last, in RGB or BGR
//! order, each value `(pixel × scale − mean) / std`.

use serde::{Deserialize, Serialize};

use crate::backend::BackendError;
use crate::frame::{RgbFrame, Tap};
use crate::tensor::{TensorF32, TensorInfo};

/// Where the channels sit in the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// `[N, C, H, W]` (most vision models exported from PyTorch or Paddle).
    #[default]
    Nchw,
    /// `[N, H, W, C]` (most exported from TensorFlow).
    Nhwc,
}

/// The order of the three colour channels the model expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChannelOrder {
    /// Red, green, blue.
    #[default]
    Rgb,
    /// Blue, green, red (models trained on OpenCV's images).
    Bgr,
}

/// How the image is brought to the input's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Resize {
    /// Each side scaled to the input's (the aspect ratio is not kept).
    #[default]
    Stretch,
    /// The short side scaled to [`ImageSpec::short_side`] (the aspect ratio kept), then the
    /// input's size cut from the centre (the usual ImageNet evaluation).
    CenterCrop,
}

/// How an image becomes the model's image input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageSpec {
    /// The name of the graph input the image feeds (default: the only 4-D input).
    #[serde(default)]
    pub input: Option<String>,
    /// Width and height fed to the model (default: the input's fixed sizes).
    #[serde(default)]
    pub size: Option<[u32; 2]>,
    /// Stretch or centre crop.
    #[serde(default)]
    pub resize: Resize,
    /// With [`Resize::CenterCrop`], the short side's length before the cut (default: the
    /// input's short side × 256 / 224, as ImageNet models are evaluated).
    #[serde(default)]
    pub short_side: Option<u32>,
    /// Channels first or last (default: channels first).
    #[serde(default)]
    pub layout: Layout,
    /// RGB or BGR (default RGB).
    #[serde(default)]
    pub channels: ChannelOrder,
    /// Each 0–255 pixel value is multiplied by this first (default 1/255).
    #[serde(default = "default_scale")]
    pub scale: f32,
    /// Then this is taken away, per channel in the model's order (default 0).
    #[serde(default)]
    pub mean: [f32; 3],
    /// Then divided by this, per channel in the model's order (default 1).
    #[serde(default = "default_std")]
    pub std: [f32; 3],
}

fn default_scale() -> f32 {
    1.0 / 255.0
}

fn default_std() -> [f32; 3] {
    [1.0; 3]
}

impl Default for ImageSpec {
    fn default() -> Self {
        Self {
            input: None,
            size: None,
            resize: Resize::default(),
            short_side: None,
            layout: Layout::default(),
            channels: ChannelOrder::default(),
            scale: default_scale(),
            mean: [0.0; 3],
            std: default_std(),
        }
    }
}

/// An [`ImageSpec`] checked against the graph input it feeds: every size known.
#[derive(Debug, Clone, PartialEq)]
pub struct ImagePlan {
    /// The input's position in the graph.
    pub input: usize,
    spec: ImageSpec,
    width: u32,
    height: u32,
}

impl ImageSpec {
    /// Checks the spec against the graph's `inputs` and settles the sizes. `model` names
    /// the model in errors.
    pub fn plan(&self, model: &str, inputs: &[TensorInfo]) -> Result<ImagePlan, BackendError> {
        let bad = |why: String| BackendError::InvalidInput(format!("model {model}: {why}"));
        let index = match &self.input {
            Some(name) => inputs.iter().position(|i| &i.name == name).ok_or_else(|| {
                bad(format!(
                    "image input `{name}` is not an input of the graph (its inputs: {})",
                    names(inputs)
                ))
            })?,
            None => {
                let four: Vec<usize> = (0..inputs.len())
                    .filter(|&i| inputs[i].shape.len() == 4)
                    .collect();
                match four.as_slice() {
                    [only] => *only,
                    _ => {
                        return Err(bad(format!(
                            "cannot tell which input takes the image (inputs: {}): name it with `image.input`",
                            names(inputs)
                        )));
                    }
                }
            }
        };
        let info = &inputs[index];
        if info.shape.len() != 4 {
            return Err(bad(format!(
                "input `{}` is {}, not an image batch of 4 dimensions",
                info.name,
                info.shape_text()
            )));
        }
        let (c, h, w) = match self.layout {
            Layout::Nchw => (info.shape[1], info.shape[2], info.shape[3]),
            Layout::Nhwc => (info.shape[3], info.shape[1], info.shape[2]),
        };
        if c >= 0 && c != 3 {
            return Err(bad(format!(
                "input `{}` is {} with {c} channels where the layout \"{}\" puts them; an image has 3: set `image.layout`",
                info.name,
                info.shape_text(),
                match self.layout {
                    Layout::Nchw => "nchw",
                    Layout::Nhwc => "nhwc",
                }
            )));
        }
        let fixed = (w > 0 && h > 0).then_some([w as u32, h as u32]);
        let [width, height] = match (self.size, fixed) {
            (Some(size), Some(graph)) if size != graph => {
                return Err(bad(format!(
                    "`image.size` {}×{} disagrees with input `{}` of {}: leave `image.size` out",
                    size[0],
                    size[1],
                    info.name,
                    info.shape_text()
                )));
            }
            (Some(size), _) | (None, Some(size)) => size,
            (None, None) => {
                return Err(bad(format!(
                    "input `{}` is {}, with free height and width: give them with `image.size = [W, H]`",
                    info.name,
                    info.shape_text()
                )));
            }
        };
        if width == 0 || height == 0 || width > 8192 || height > 8192 {
            return Err(bad(format!(
                "`image.size` {width}×{height}: each side must be 1–8192 pixels"
            )));
        }
        if self.std.iter().any(|&s| s == 0.0 || !s.is_finite()) || !self.scale.is_finite() {
            return Err(bad(format!(
                "`image.std` {:?} and `image.scale` {} must be finite, and no std 0",
                self.std, self.scale
            )));
        }
        Ok(ImagePlan {
            input: index,
            spec: self.clone(),
            width,
            height,
        })
    }
}

fn names(inputs: &[TensorInfo]) -> String {
    let all: Vec<String> = inputs
        .iter()
        .map(|i| format!("`{}` {} {}", i.name, i.datatype, i.shape_text()))
        .collect();
    all.join(", ")
}

impl ImagePlan {
    /// The width and height fed to the model.
    pub fn size(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    /// The image as a batch of one, ready for the model.
    pub fn tensor(&self, frame: &RgbFrame) -> TensorF32 {
        let (w, h) = (self.width as usize, self.height as usize);
        let (xs, ys) = self.taps(frame);
        let s = &self.spec;
        // Per output channel: which RGB channel it reads, and its affine map.
        let order: [usize; 3] = match s.channels {
            ChannelOrder::Rgb => [0, 1, 2],
            ChannelOrder::Bgr => [2, 1, 0],
        };
        let mut data = vec![0.0f32; 3 * w * h];
        frame.resample_rows(&xs, &ys, |y, row| {
            for (x, px) in row.iter().enumerate() {
                for (c, &from) in order.iter().enumerate() {
                    let v = (px[from] * s.scale - s.mean[c]) / s.std[c];
                    let at = match s.layout {
                        Layout::Nchw => (c * h + y) * w + x,
                        Layout::Nhwc => (y * w + x) * 3 + c,
                    };
                    data[at] = v;
                }
            }
        });
        let shape = match s.layout {
            Layout::Nchw => vec![1, 3, h, w],
            Layout::Nhwc => vec![1, h, w, 3],
        };
        TensorF32 { shape, data }
    }

    /// Bilinear taps over the frame for each output column and row.
    fn taps(&self, frame: &RgbFrame) -> (Vec<Tap>, Vec<Tap>) {
        let [(ox, sx), (oy, sy)] = self.axes(frame.width(), frame.height());
        (
            Tap::grid(self.width as usize, ox, sx, frame.width()),
            Tap::grid(self.height as usize, oy, sy, frame.height()),
        )
    }

    /// Per axis (x, y), where the input's first pixel starts in a `fw`×`fh` frame and how
    /// many frame pixels one input pixel spans.
    fn axes(&self, fw: u32, fh: u32) -> [(f32, f32); 2] {
        let (fw, fh) = (fw as f32, fh as f32);
        let (w, h) = (self.width as f32, self.height as f32);
        match self.spec.resize {
            Resize::Stretch => [(0.0, fw / w), (0.0, fh / h)],
            Resize::CenterCrop => {
                let short = self
                    .spec
                    .short_side
                    .map_or(w.min(h) * 256.0 / 224.0, |s| s as f32)
                    .max(w.max(h));
                // Source pixels per output pixel, and the cut's offset in the scaled image.
                let step = fw.min(fh) / short;
                let (sw, sh) = (fw / step, fh / step);
                let (ox, oy) = (((sw - w) / 2.0).floor(), ((sh - h) / 2.0).floor());
                [(ox * step, step), (oy * step, step)]
            }
        }
    }

    /// A box (left, top, right, bottom) in the input's pixels, in the pixels of the
    /// `fw`×`fh` frame it was made from, held inside the frame.
    pub fn to_frame(&self, bbox: [f32; 4], fw: u32, fh: u32) -> [f32; 4] {
        let [(ox, sx), (oy, sy)] = self.axes(fw, fh);
        let x = |v: f32| (ox + v * sx).clamp(0.0, fw as f32);
        let y = |v: f32| (oy + v * sy).clamp(0.0, fh as f32);
        [x(bbox[0]), y(bbox[1]), x(bbox[2]), y(bbox[3])]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::DataType;

    fn input(shape: &[i64]) -> Vec<TensorInfo> {
        vec![TensorInfo {
            name: "x".into(),
            datatype: DataType::Fp32,
            shape: shape.to_vec(),
        }]
    }

    fn frame(w: u32, h: u32, rgb: [u8; 3]) -> RgbFrame {
        let data = (0..w * h).flat_map(|_| rgb).collect();
        RgbFrame::new(w, h, data).expect("a valid frame")
    }

    #[test]
    fn a_flat_colour_is_scaled_normalised_and_laid_out_in_the_models_order() {
        let spec = ImageSpec {
            channels: ChannelOrder::Bgr,
            mean: [0.5, 0.0, 0.0],
            std: [0.5, 1.0, 1.0],
            ..ImageSpec::default()
        };
        let plan = spec.plan("m", &input(&[-1, 3, 4, 6])).expect("plan");
        let t = plan.tensor(&frame(30, 20, [255, 0, 51]));
        assert_eq!(t.shape, vec![1, 3, 4, 6]);
        // Channel 0 is blue (51/255 = 0.2): (0.2 − 0.5) / 0.5 = −0.6.
        assert!((t.data[0] + 0.6).abs() < 1e-5, "{}", t.data[0]);
        // Channel 2 is red: 1.0.
        assert!((t.data[2 * 24] - 1.0).abs() < 1e-6);
    }

    #[test]
    fn channels_last_interleaves_each_pixel() {
        let spec = ImageSpec {
            layout: Layout::Nhwc,
            scale: 1.0,
            ..ImageSpec::default()
        };
        let plan = spec.plan("m", &input(&[1, 2, 2, 3])).expect("plan");
        let t = plan.tensor(&frame(5, 5, [1, 2, 3]));
        assert_eq!(t.shape, vec![1, 2, 2, 3]);
        assert_eq!(&t.data[..6], &[1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
    }

    #[test]
    fn a_centre_crop_reads_the_middle_of_the_frame() {
        // Left third black, middle white, right third black: the crop sees only white.
        let (w, h) = (300u32, 100u32);
        let data = (0..h)
            .flat_map(|_| {
                (0..w).flat_map(|x| {
                    if (100..200).contains(&x) {
                        [255; 3]
                    } else {
                        [0; 3]
                    }
                })
            })
            .collect();
        let spec = ImageSpec {
            resize: Resize::CenterCrop,
            short_side: Some(10),
            ..ImageSpec::default()
        };
        let plan = spec.plan("m", &input(&[1, 3, 8, 8])).expect("plan");
        let t = plan.tensor(&RgbFrame::new(w, h, data).expect("frame"));
        assert!(t.data.iter().all(|&v| v > 0.99), "{:?}", &t.data[..8]);
    }

    #[test]
    fn a_box_in_the_input_maps_back_to_the_frame_it_was_made_from() {
        let stretch = ImageSpec::default()
            .plan("m", &input(&[1, 3, 100, 200]))
            .expect("plan");
        // 200×100 input from a 400×300 frame: x × 2, y × 3.
        assert_eq!(
            stretch.to_frame([10.0, 10.0, 20.0, 50.0], 400, 300),
            [20.0, 30.0, 40.0, 150.0]
        );
        let crop = ImageSpec {
            resize: Resize::CenterCrop,
            short_side: Some(10),
            ..ImageSpec::default()
        }
        .plan("m", &input(&[1, 3, 10, 10]))
        .expect("plan");
        // 300×100 frame: short side 100 → 10 (step 10), the 10×10 cut from x = 10 (frame 100).
        assert_eq!(
            crop.to_frame([0.0, 0.0, 10.0, 10.0], 300, 100),
            [100.0, 0.0, 200.0, 100.0]
        );
    }

    #[test]
    fn inputs_that_cannot_take_an_image_are_named_with_the_fix() {
        let spec = ImageSpec::default();
        let free = spec
            .plan("m", &input(&[-1, 3, -1, -1]))
            .unwrap_err()
            .to_string();
        assert!(free.contains("image.size"), "{free}");
        let gray = spec
            .plan("m", &input(&[1, 1, 8, 8]))
            .unwrap_err()
            .to_string();
        assert!(
            gray.contains("1 channels") && gray.contains("image.layout"),
            "{gray}"
        );
        let flat = spec.plan("m", &input(&[1, 10])).unwrap_err().to_string();
        assert!(flat.contains("`x` FP32 [1, 10]"), "{flat}");
        let named = ImageSpec {
            input: Some("pixels".into()),
            ..ImageSpec::default()
        };
        let err = named
            .plan("m", &input(&[1, 3, 8, 8]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("`pixels` is not an input"), "{err}");
    }
}
