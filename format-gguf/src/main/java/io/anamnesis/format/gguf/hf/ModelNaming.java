package io.anamnesis.format.gguf.hf;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The {@code general.*} naming keys gguf-py's {@code Metadata} derives without a model card:
 * from config.json's {@code _name_or_path} (when it is a model id, not a path), then from
 * the folder's name ({@code get_model_id_components}, {@code id_to_title}); and the size
 * label from the parameter count ({@code size_label}). A {@code README.md} model card is not
 * read (its YAML front matter would add license, tags, base models and may set the name).
 */
record ModelNaming(String name, String organization, String basename, String finetune, String version, String sizeLabel) {

    private static final Pattern VERSION = Pattern.compile("(v|iter)?\\d+([.]\\d+)*", Pattern.CASE_INSENSITIVE);
    private static final Pattern TYPE = Pattern.compile("i?q\\d(_\\w)*|b?fp?(16|32)", Pattern.CASE_INSENSITIVE);
    private static final Pattern SIZE = Pattern.compile("(([A]|\\d+[x])?\\d+([._]\\d+)?[KMBT][\\d]?|small|mini|medium|large|x?xl)",
            Pattern.CASE_INSENSITIVE);
    private static final Pattern FINETUNE = Pattern.compile("chat|instruct|vision|lora", Pattern.CASE_INSENSITIVE);
    private static final Pattern NOT_TITLED = Pattern.compile("^(v\\d+(?:\\.\\d+)*|\\d.*)$");

    /**
     * @param nameOrPath  config.json's {@code _name_or_path}, if any
     * @param folder      the model folder's name
     * @param totalParams the output tensors' element count
     */
    static ModelNaming of(Optional<String> nameOrPath, String folder, long totalParams) {
        return of(nameOrPath, folder, totalParams, totalParams > 0 ? sizeLabel(totalParams) : null);
    }

    /**
     * {@link #of(Optional, String, long)} with the size label gguf-py derives from the
     * tensors when the names give none ({@code 8x7.2B} for stacked experts).
     */
    static ModelNaming of(Optional<String> nameOrPath, String folder, long totalParams, String derivedSize) {
        String name = null, org = null, base = null, fine = null, version = null, size = null;
        List<Optional<String>> ids = new ArrayList<>();
        ids.add(nameOrPath.filter(n -> n.chars().filter(c -> c == '/').count() <= 1));
        ids.add(Optional.of(folder));
        for (Optional<String> id : ids) {
            if (id.isEmpty()) continue;
            String[] c = components(id.get(), totalParams);
            if (name == null && c[0] != null) name = title(c[0]);
            if (org == null && c[1] != null) org = title(c[1]);
            if (base == null) base = c[2];
            if (fine == null) fine = c[3];
            if (version == null) version = c[4];
            if (size == null) size = c[5];
        }
        if (size == null && totalParams > 0) size = derivedSize;
        return new ModelNaming(name, org, base, fine, version, size);
    }

    /** {@code get_model_id_components}: full name, organization, basename, finetune, version, size label. */
    static String[] components(String modelId, long totalParams) {
        if (modelId.contains(" ")) return new String[]{modelId, null, null, null, null, null};
        String org = null, full = modelId;
        int slash = modelId.indexOf('/');
        if (slash >= 0) {
            org = modelId.substring(0, slash);
            full = modelId.substring(slash + 1);
        }
        if (org != null && !org.isEmpty() && org.charAt(0) == '.') org = null;
        List<String> parts = new ArrayList<>();
        for (String p : full.split("-", -1)) if (!p.isEmpty()) parts.add(p);
        List<Set<String>> types = new ArrayList<>();
        for (int i = 0; i < parts.size(); i++) {
            String part = parts.get(i);
            Set<String> t = new LinkedHashSet<>();
            types.add(t);
            if (VERSION.matcher(part).matches()) {
                t.add("version");
            } else if (TYPE.matcher(part).matches()) {
                t.add("type");
                parts.set(i, part.toUpperCase(Locale.ROOT));
            } else if (i > 0 && SIZE.matcher(part).matches()) {
                part = part.replace("_", ".");
                if (Character.isDigit(part.charAt(part.length() - 1))) {
                    part = part.substring(0, part.length() - 2) + "." + part.charAt(part.length() - 1) + part.charAt(part.length() - 2);
                }
                if (part.length() > 1 && Character.isDigit(part.charAt(part.length() - 2))
                        && "kmbt".indexOf(part.charAt(part.length() - 1)) >= 0) {
                    part = part.substring(0, part.length() - 1) + Character.toUpperCase(part.charAt(part.length() - 1));
                }
                if (totalParams != 0) {
                    try {
                        double label = Double.parseDouble(part.substring(0, part.length() - 1))
                                * Math.pow(1000, " KMBT".indexOf(part.charAt(part.length() - 1)));
                        if ((totalParams < 0 && label < Math.floorDiv(Math.abs(totalParams), 8))
                                || (totalParams > 0 && Math.abs(label - totalParams) > Math.floorDiv(7 * totalParams, 8))) {
                            t.add("finetune");
                            part = part.substring(0, part.length() - 1) + Character.toLowerCase(part.charAt(part.length() - 1));
                        }
                    } catch (NumberFormatException ignored) {
                        // not a number: used as it is
                    }
                }
                if (t.isEmpty()) t.add("size_label");
                parts.set(i, part);
            } else if (i > 0 && FINETUNE.matcher(part).matches()) {
                t.add(totalParams < 0 && part.equalsIgnoreCase("lora") ? "type" : "finetune");
            }
        }
        boolean numericSize = false;
        for (int i = 0; i < parts.size(); i++) {
            if (types.get(i).contains("size_label") && parts.get(i).chars().anyMatch(Character::isDigit)) numericSize = true;
        }
        if (numericSize) {
            for (int i = 0; i < parts.size(); i++) {
                if (types.get(i).contains("size_label") && parts.get(i).chars().allMatch(Character::isLetter)) {
                    types.get(i).remove("size_label");
                }
            }
        }
        boolean atStart = true;
        for (int i = 0; i < parts.size(); i++) {
            Set<String> t = types.get(i);
            if (atStart && ((t.isEmpty() && Character.isLetter(parts.get(i).charAt(0))) || t.contains("version"))) {
                t.add("basename");
            } else {
                atStart = false;
                if (t.isEmpty()) t.add("finetune");
            }
        }
        for (int i = parts.size() - 1; i >= 0; i--) {
            Set<String> t = types.get(i);
            if (t.contains("basename") && t.size() > 1) t.remove("basename");
            else break;
        }
        String basename = join(parts, types, "basename", false, true);
        String size = join(parts, types, "size_label", true, true);
        String finetune = join(parts, types, "finetune", false, true);
        String version = join(parts, types, "version", false, false);
        if (size == null && finetune == null && version == null) basename = null;
        return new String[]{full, org, basename, finetune, version, size};
    }

    private static String join(List<String> parts, List<Set<String>> types, String type, boolean distinct, boolean withBasename) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < parts.size(); i++) {
            Set<String> t = types.get(i);
            if (!t.contains(type)) continue;
            if (!withBasename && t.contains("basename")) continue;
            if (distinct && out.contains(parts.get(i))) continue;
            out.add(parts.get(i));
        }
        return out.isEmpty() ? null : String.join("-", out);
    }

    /** {@code Metadata.id_to_title}: lower-case words title-cased, unless a version or a number. */
    static String title(String s) {
        List<String> words = new ArrayList<>();
        for (String w : s.strip().replace('-', ' ').split("\\s+")) {
            if (w.isEmpty()) continue;
            words.add(isLower(w) && !NOT_TITLED.matcher(w).find() ? pythonTitle(w) : w);
        }
        return String.join(" ", words);
    }

    private static boolean isLower(String w) {
        boolean cased = false;
        for (int i = 0; i < w.length(); i++) {
            char c = w.charAt(i);
            if (Character.isUpperCase(c) || Character.isTitleCase(c)) return false;
            if (Character.isLowerCase(c)) cased = true;
        }
        return cased;
    }

    /** Python's {@code str.title()}: a letter after a non-letter is upper-cased, the others lower-cased. */
    private static String pythonTitle(String w) {
        StringBuilder b = new StringBuilder(w.length());
        boolean previousCased = false;
        for (int i = 0; i < w.length(); i++) {
            char c = w.charAt(i);
            boolean cased = Character.isLetter(c) && (Character.isUpperCase(c) || Character.isLowerCase(c) || Character.isTitleCase(c));
            b.append(!cased ? c : previousCased ? Character.toLowerCase(c) : Character.toTitleCase(c));
            previousCased = cased;
        }
        return b.toString();
    }

    /** gguf-py's {@code size_label} for a dense model: {@code model_weight_count_rounded_notation(n, 2)}. */
    static String sizeLabel(long params) {
        double n = params;
        double scaled;
        String suffix;
        if (n > 1e12) {
            scaled = n * 1e-12;
            suffix = "T";
        } else if (n > 1e9) {
            scaled = n * 1e-9;
            suffix = "B";
        } else if (n > 1e6) {
            scaled = n * 1e-6;
            suffix = "M";
        } else {
            scaled = n * 1e-3;
            suffix = "K";
        }
        // Python: round() is half-even; "%.Nf" rounds the exact binary value half-even
        String rounded = Long.toString((long) Math.rint(scaled)).replaceFirst("^0+", "");
        int fix = Math.max(2 - rounded.length(), 0);
        return new BigDecimal(scaled).setScale(fix, RoundingMode.HALF_EVEN).toPlainString() + suffix;
    }
}
