//! The providers' billing rules for images, and the per-page and per-item
//! constants for documents and everything a rule cannot size.
//!
//! Each rule follows the provider's public page (URLs and the date they were
//! consulted are in `docs/design/media-tokens.md`):
//! - Anthropic: an image is scaled down, aspect kept, until its long edge is
//!   at most 1,568 px and it holds at most 1,200,000 px (1,600 tokens, the
//!   page's "about 1,600 tokens"); it then costs `ceil(w * h / 750)`.
//! - OpenAI, tile rule (GPT-4o, GPT-4.1, GPT-4.5, GPT-5, o1, o3, ...): `detail:
//!   low` is the base constant; otherwise the image is fit into 2048 x 2048,
//!   then its short side brought down to 768 px, and each 512-px tile costs
//!   the tile price on top of the base.
//! - OpenAI, patch rule (GPT-4.1-mini/nano, GPT-5-mini/nano, o4-mini): 32-px
//!   patches, at most 1,536 (a larger image is scaled down so that whole
//!   patches fit), times the model's multiplier.
//! - Gemini: 258 tokens for an image with both sides at most 384 px, else 258
//!   per 768-px tile (a side above 3,072 px is first scaled down to it: our
//!   bound, so that the cap is finite).
//!
//! Whatever cannot be sized (a malformed header, an `s3Location` source, a
//! video, a document other than a PDF) costs the rule's cap: never 0.

/// `detail` of an OpenAI image (other rules ignore it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detail {
    /// `high` or `auto` (counted as `high`: the larger of the two).
    High,
    /// `low`: the base constant of the tile rule.
    Low,
}

/// One provider's rule for a model family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Claude models.
    Anthropic,
    /// OpenAI's 512-px tile rule with its base and per-tile prices.
    OpenAiTile { base: u32, tile: u32 },
    /// OpenAI's 32-px patch rule with its multiplier in thousandths.
    OpenAiPatch { multiplier_milli: u32 },
    /// Gemini 2.x.
    Gemini,
}

/// The rules by name (the names the binding and the Python layer use).
pub const RULES: &[(&str, Rule)] = &[
    ("anthropic", Rule::Anthropic),
    (
        "openai-tile-85",
        Rule::OpenAiTile {
            base: 85,
            tile: 170,
        },
    ),
    (
        "openai-tile-70",
        Rule::OpenAiTile {
            base: 70,
            tile: 140,
        },
    ),
    (
        "openai-tile-75",
        Rule::OpenAiTile {
            base: 75,
            tile: 150,
        },
    ),
    (
        "openai-tile-65",
        Rule::OpenAiTile {
            base: 65,
            tile: 129,
        },
    ),
    (
        "openai-tile-2833",
        Rule::OpenAiTile {
            base: 2_833,
            tile: 5_667,
        },
    ),
    (
        "openai-patch-1.62",
        Rule::OpenAiPatch {
            multiplier_milli: 1_620,
        },
    ),
    (
        "openai-patch-2.46",
        Rule::OpenAiPatch {
            multiplier_milli: 2_460,
        },
    ),
    (
        "openai-patch-1.72",
        Rule::OpenAiPatch {
            multiplier_milli: 1_720,
        },
    ),
    ("gemini", Rule::Gemini),
];

const ANTHROPIC_LONG_EDGE: f64 = 1_568.0;
const ANTHROPIC_MAX_PIXELS: f64 = 1_200_000.0;
const ANTHROPIC_PIXELS_PER_TOKEN: u64 = 750;
const ANTHROPIC_CAP: u32 = 1_600;
/// Anthropic's "1,500-3,000 tokens per page" for a PDF page (text and page image): the upper end.
const ANTHROPIC_PDF_PAGE: u32 = 3_000;

const OPENAI_FIT: f64 = 2_048.0;
const OPENAI_SHORT_SIDE: f64 = 768.0;
const OPENAI_TILE: u64 = 512;
/// The most tiles the tile rule can give: 768 x 2048 is 2 x 4 tiles.
const OPENAI_MAX_TILES: u32 = 8;
const OPENAI_PATCH: f64 = 32.0;
const OPENAI_MAX_PATCHES: u64 = 1_536;

const GEMINI_IMAGE: u32 = 258;
const GEMINI_SMALL_SIDE: u32 = 384;
const GEMINI_TILE: u64 = 768;
const GEMINI_FIT: f64 = 3_072.0;
/// A 3,072-px square is 4 x 4 tiles.
const GEMINI_MAX_TILES: u32 = 16;
/// Gemini's "each document page is 258 tokens".
const GEMINI_PDF_PAGE: u32 = 258;

/// `x * scale`, rounded down (with a hair of tolerance for float error), at least 1.
fn scaled(x: u32, scale: f64) -> u64 {
    let v = (f64::from(x) * scale + 1e-9).floor();
    if v < 1.0 {
        1
    } else {
        v as u64
    }
}

fn div_ceil(a: u64, b: u64) -> u64 {
    a.div_ceil(b)
}

fn clamp_u32(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

impl Rule {
    /// The rule called `name`, if any.
    pub fn named(name: &str) -> Option<Rule> {
        RULES.iter().find(|(n, _)| *n == name).map(|(_, r)| *r)
    }

    /// The most an image can cost under this rule: what anything that cannot be sized costs.
    pub fn cap(&self, detail: Detail) -> u32 {
        match *self {
            Rule::Anthropic => ANTHROPIC_CAP,
            Rule::OpenAiTile { base, .. } if detail == Detail::Low => base,
            Rule::OpenAiTile { base, tile } => base + tile * OPENAI_MAX_TILES,
            Rule::OpenAiPatch { multiplier_milli } => clamp_u32(div_ceil(
                OPENAI_MAX_PATCHES * u64::from(multiplier_milli),
                1_000,
            )),
            Rule::Gemini => GEMINI_IMAGE * GEMINI_MAX_TILES,
        }
    }

    /// Tokens of one PDF page.
    pub fn pdf_page(&self) -> u32 {
        match self {
            Rule::Anthropic => ANTHROPIC_PDF_PAGE,
            // OpenAI sends each page's text and an image of it, and publishes no per-page
            // figure: the image at the rule's cap stands for both.
            Rule::OpenAiTile { .. } | Rule::OpenAiPatch { .. } => self.cap(Detail::High),
            Rule::Gemini => GEMINI_PDF_PAGE,
        }
    }

    /// Tokens of an image of `size` (`None`: it could not be read, so the cap).
    pub fn image(&self, size: Option<(u32, u32)>, detail: Detail) -> u32 {
        let Some((w, h)) = size else {
            return self.cap(detail);
        };
        if w == 0 || h == 0 {
            return self.cap(detail);
        }
        match *self {
            Rule::Anthropic => anthropic(w, h),
            Rule::OpenAiTile { base, .. } if detail == Detail::Low => base,
            Rule::OpenAiTile { base, tile } => {
                openai_tiles(w, h).saturating_mul(tile).saturating_add(base)
            }
            Rule::OpenAiPatch { multiplier_milli } => clamp_u32(div_ceil(
                openai_patches(w, h) * u64::from(multiplier_milli),
                1_000,
            )),
            Rule::Gemini => gemini(w, h),
        }
    }
}

fn anthropic(w: u32, h: u32) -> u32 {
    let (wf, hf) = (f64::from(w), f64::from(h));
    let long = wf.max(hf);
    let scale = 1f64
        .min(ANTHROPIC_LONG_EDGE / long)
        .min((ANTHROPIC_MAX_PIXELS / (wf * hf)).sqrt());
    let (nw, nh) = if scale < 1.0 {
        (scaled(w, scale), scaled(h, scale))
    } else {
        (u64::from(w), u64::from(h))
    };
    clamp_u32(div_ceil(nw * nh, ANTHROPIC_PIXELS_PER_TOKEN)).min(ANTHROPIC_CAP)
}

/// 512-px tiles after fitting into 2048 x 2048 and bringing the short side down to 768.
fn openai_tiles(w: u32, h: u32) -> u32 {
    let (mut w, mut h) = (u64::from(w), u64::from(h));
    let long = w.max(h) as f64;
    if long > OPENAI_FIT {
        let s = OPENAI_FIT / long;
        (w, h) = (scaled(w as u32, s), scaled(h as u32, s));
    }
    let short = w.min(h) as f64;
    if short > OPENAI_SHORT_SIDE {
        let s = OPENAI_SHORT_SIDE / short;
        (w, h) = (scaled(w as u32, s), scaled(h as u32, s));
    }
    let tiles = div_ceil(w, OPENAI_TILE) * div_ceil(h, OPENAI_TILE);
    clamp_u32(tiles).min(OPENAI_MAX_TILES)
}

/// 32-px patches, at most 1,536: a larger image is scaled so that whole patches fit.
fn openai_patches(w: u32, h: u32) -> u64 {
    let patch = OPENAI_PATCH as u64;
    let raw = div_ceil(u64::from(w), patch) * div_ceil(u64::from(h), patch);
    if raw <= OPENAI_MAX_PATCHES {
        return raw;
    }
    let (wf, hf) = (f64::from(w), f64::from(h));
    let mut r = (OPENAI_PATCH * OPENAI_PATCH * OPENAI_MAX_PATCHES as f64 / (wf * hf)).sqrt();
    let (pw, ph) = (wf * r / OPENAI_PATCH, hf * r / OPENAI_PATCH);
    r *= (pw.floor() / pw).min(ph.floor() / ph);
    let (nw, nh) = (scaled(w, r), scaled(h, r));
    (div_ceil(nw, patch) * div_ceil(nh, patch)).min(OPENAI_MAX_PATCHES)
}

fn gemini(w: u32, h: u32) -> u32 {
    if w <= GEMINI_SMALL_SIDE && h <= GEMINI_SMALL_SIDE {
        return GEMINI_IMAGE;
    }
    let (mut nw, mut nh) = (u64::from(w), u64::from(h));
    let long = nw.max(nh) as f64;
    if long > GEMINI_FIT {
        let s = GEMINI_FIT / long;
        (nw, nh) = (scaled(w, s), scaled(h, s));
    }
    let tiles =
        clamp_u32(div_ceil(nw, GEMINI_TILE) * div_ceil(nh, GEMINI_TILE)).min(GEMINI_MAX_TILES);
    GEMINI_IMAGE * tiles
}

#[cfg(test)]
mod tests {
    use super::*;

    const HIGH: Detail = Detail::High;

    fn rule(name: &str) -> Rule {
        Rule::named(name).expect("a known rule")
    }

    /// 40 sizes from 1 px to 12 MP, both orientations (20 shapes, each both ways).
    fn forty_sizes() -> Vec<(u32, u32)> {
        let shapes = [
            (1, 1),
            (1, 2),
            (16, 9),
            (64, 48),
            (200, 200),
            (384, 384),
            (385, 100),
            (512, 512),
            (640, 480),
            (768, 1024),
            (1000, 1000),
            (1092, 1092),
            (1280, 800),
            (1568, 784),
            (1800, 2400),
            (1920, 1080),
            (2048, 4096),
            (2560, 1600),
            (4000, 3000),
            (8000, 1500),
        ];
        let mut sizes = Vec::new();
        for (w, h) in shapes {
            sizes.push((w, h));
            sizes.push((h, w));
        }
        assert_eq!(sizes.len(), 40);
        sizes
    }

    // Independent statements of each rule, written from the provider pages in
    // floating point, without the implementation's integer steps.
    fn anthropic_reference(w: f64, h: f64) -> f64 {
        let s = 1f64
            .min(1568.0 / w.max(h))
            .min((1_200_000.0 / (w * h)).sqrt());
        let (w, h) = if s < 1.0 {
            ((w * s).floor().max(1.0), (h * s).floor().max(1.0))
        } else {
            (w, h)
        };
        (w * h / 750.0).ceil().min(1600.0)
    }

    fn openai_tile_reference(w: f64, h: f64, base: f64, tile: f64) -> f64 {
        let s1 = (2048.0 / w.max(h)).min(1.0);
        let (w, h) = if s1 < 1.0 {
            ((w * s1).floor().max(1.0), (h * s1).floor().max(1.0))
        } else {
            (w, h)
        };
        let s2 = (768.0 / w.min(h)).min(1.0);
        let (w, h) = if s2 < 1.0 {
            ((w * s2).floor().max(1.0), (h * s2).floor().max(1.0))
        } else {
            (w, h)
        };
        base + tile * ((w / 512.0).ceil() * (h / 512.0).ceil())
    }

    fn gemini_reference(w: f64, h: f64) -> f64 {
        if w <= 384.0 && h <= 384.0 {
            return 258.0;
        }
        let s = (3072.0 / w.max(h)).min(1.0);
        let (w, h) = ((w * s).floor().max(1.0), (h * s).floor().max(1.0));
        258.0 * (w / 768.0).ceil() * (h / 768.0).ceil()
    }

    #[test]
    fn anthropic_matches_the_published_examples() {
        let r = rule("anthropic");
        // The vision page's table: 200x200 ~54, 1000x1000 ~1334, 1092x1092 ~1590 tokens.
        assert_eq!(r.image(Some((200, 200)), HIGH), 54);
        assert_eq!(r.image(Some((1000, 1000)), HIGH), 1_334);
        assert_eq!(r.image(Some((1092, 1092)), HIGH), 1_590);
        // The page's largest sizes per aspect ratio stay at about 1,600 tokens.
        for (w, h) in [(951, 1268), (896, 1344), (819, 1456), (784, 1568)] {
            let t = r.image(Some((w, h)), HIGH);
            assert!((1_580..=1_600).contains(&t), "{w}x{h}: {t}");
        }
        // Screenshots: 1280x800 as is; 2560x1600 resized to the limits.
        assert_eq!(r.image(Some((1280, 800)), HIGH), 1_366);
        assert_eq!(r.image(Some((2560, 1600)), HIGH), 1_600);
    }

    #[test]
    fn openai_tile_rule_matches_the_published_examples() {
        let r = rule("openai-tile-85");
        assert_eq!(r.image(Some((1024, 1024)), HIGH), 765);
        assert_eq!(r.image(Some((2048, 4096)), HIGH), 1_105);
        assert_eq!(r.image(Some((4096, 8192)), Detail::Low), 85);
        assert_eq!(r.image(Some((512, 512)), HIGH), 255);
        assert_eq!(
            rule("openai-tile-2833").image(Some((1024, 1024)), HIGH),
            2_833 + 4 * 5_667
        );
    }

    #[test]
    fn openai_patch_rule_matches_the_published_examples() {
        let raw = Rule::OpenAiPatch {
            multiplier_milli: 1_000,
        };
        // The page's examples: 1024x1024 is 1,024 patches; 1800x2400 is scaled to 1056x1408, 1,452.
        assert_eq!(raw.image(Some((1024, 1024)), HIGH), 1_024);
        assert_eq!(raw.image(Some((1800, 2400)), HIGH), 1_452);
        assert_eq!(
            rule("openai-patch-1.62").image(Some((1024, 1024)), HIGH),
            1_659
        );
        assert_eq!(
            rule("openai-patch-2.46").image(Some((1800, 2400)), HIGH),
            3_572
        );
    }

    #[test]
    fn gemini_matches_the_published_examples() {
        let r = rule("gemini");
        assert_eq!(r.image(Some((384, 384)), HIGH), 258);
        assert_eq!(r.image(Some((1, 384)), HIGH), 258);
        assert_eq!(r.image(Some((385, 384)), HIGH), 258);
        assert_eq!(r.image(Some((768, 768)), HIGH), 258);
        assert_eq!(r.image(Some((769, 768)), HIGH), 516);
        assert_eq!(r.image(Some((1536, 1536)), HIGH), 1_032);
    }

    #[test]
    fn forty_sizes_per_rule_follow_the_rule_and_stay_within_the_cap() {
        for (w, h) in forty_sizes() {
            let (wf, hf) = (f64::from(w), f64::from(h));
            let a = rule("anthropic").image(Some((w, h)), HIGH);
            assert_eq!(
                f64::from(a),
                anthropic_reference(wf, hf),
                "anthropic {w}x{h}"
            );
            assert!((1..=1_600).contains(&a));
            for (name, base, tile) in [("openai-tile-85", 85, 170), ("openai-tile-75", 75, 150)] {
                let t = rule(name).image(Some((w, h)), HIGH);
                assert_eq!(
                    f64::from(t),
                    openai_tile_reference(wf, hf, f64::from(base), f64::from(tile))
                );
                assert!(t <= rule(name).cap(HIGH), "{name} {w}x{h}");
                assert_eq!(rule(name).image(Some((w, h)), Detail::Low), base);
            }
            let p = Rule::OpenAiPatch {
                multiplier_milli: 1_000,
            }
            .image(Some((w, h)), HIGH);
            let raw = (wf / 32.0).ceil() * (hf / 32.0).ceil();
            if raw <= 1536.0 {
                assert_eq!(f64::from(p), raw, "patches {w}x{h}");
            } else {
                // Scaled so that whole patches fit: at most 1,536, and not far below it.
                assert!((1_100..=1_536).contains(&p), "patches {w}x{h}: {p}");
            }
            let g = rule("gemini").image(Some((w, h)), HIGH);
            assert_eq!(f64::from(g), gemini_reference(wf, hf), "gemini {w}x{h}");
            // Both orientations cost the same.
            for (name, _) in RULES {
                let r = rule(name);
                assert_eq!(
                    r.image(Some((w, h)), HIGH),
                    r.image(Some((h, w)), HIGH),
                    "{name} {w}x{h}"
                );
            }
        }
    }

    #[test]
    fn what_cannot_be_sized_costs_the_cap() {
        for (name, r) in RULES {
            assert_eq!(r.image(None, HIGH), r.cap(HIGH), "{name}");
            assert_eq!(r.image(Some((0, 7)), HIGH), r.cap(HIGH), "{name}");
            assert!(r.cap(HIGH) > 0 && r.pdf_page() > 0);
            for (w, h) in forty_sizes() {
                assert!(r.image(Some((w, h)), HIGH) <= r.cap(HIGH), "{name} {w}x{h}");
            }
        }
    }
}
