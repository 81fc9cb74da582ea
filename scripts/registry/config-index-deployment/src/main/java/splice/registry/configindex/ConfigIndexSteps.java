package splice.registry.configindex;

import java.util.ArrayList;
import java.util.List;

import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.jandex.AnnotationInstance;
import org.jboss.jandex.AnnotationTarget;
import org.jboss.jandex.AnnotationValue;
import org.jboss.jandex.DotName;
import org.jboss.jandex.Type;

import apicurio.common.app.components.config.index.DynamicPropertiesInfoRecorder;
import io.apicurio.common.apps.config.Dynamic;
import io.apicurio.common.apps.config.DynamicConfigPropertyDef;
import io.apicurio.common.apps.config.DynamicConfigPropertyList;
import io.quarkus.arc.deployment.BeanDiscoveryFinishedBuildItem;
import io.quarkus.arc.deployment.SyntheticBeanBuildItem;
import io.quarkus.arc.processor.InjectionPointInfo;
import io.quarkus.deployment.annotations.BuildProducer;
import io.quarkus.deployment.annotations.BuildStep;
import io.quarkus.deployment.annotations.ExecutionTime;
import io.quarkus.deployment.annotations.Record;

/**
 * The build step of the config-index extension, whose deployment module is
 * not served here. Apicurio Registry declares its settings that may change
 * at run time as fields {@code @ConfigProperty(...) @Dynamic(...)
 * Supplier<T> x}; its runtime looks them up in a
 * {@link DynamicConfigPropertyList} bean. This step finds those fields among
 * the application's injection points and makes that bean (with the
 * runtime module's own recorder), so the app starts as upstream's build of
 * it would.
 */
public class ConfigIndexSteps {

    private static final DotName CONFIG_PROPERTY = DotName.createSimple(ConfigProperty.class.getName());
    private static final DotName DYNAMIC = DotName.createSimple(Dynamic.class.getName());

    @BuildStep
    @Record(ExecutionTime.RUNTIME_INIT)
    void dynamicPropertiesBean(DynamicPropertiesInfoRecorder recorder,
            BeanDiscoveryFinishedBuildItem discovery,
            BuildProducer<SyntheticBeanBuildItem> beans) {
        List<DynamicConfigPropertyDef> found = new ArrayList<>();
        for (InjectionPointInfo point : discovery.getInjectionPoints()) {
            AnnotationInstance dynamic = dynamicAnnotation(point);
            if (dynamic != null) {
                found.add(definition(point, dynamic));
            }
        }
        beans.produce(SyntheticBeanBuildItem.configure(DynamicConfigPropertyList.class)
                .runtimeValue(recorder.initializePropertiesInfo(found))
                .unremovable()
                .setRuntimeInit()
                .done());
    }

    /** The field's {@code @Dynamic}, when it is a config property field that has one. */
    private static AnnotationInstance dynamicAnnotation(InjectionPointInfo point) {
        if (!point.isField() || point.getRequiredQualifier(CONFIG_PROPERTY) == null) {
            return null;
        }
        AnnotationTarget field = point.getTarget();
        return field.asField().annotation(DYNAMIC);
    }

    private static DynamicConfigPropertyDef definition(InjectionPointInfo point,
            AnnotationInstance dynamic) {
        AnnotationInstance config = point.getRequiredQualifier(CONFIG_PROPERTY);
        String name = config.value("name").asString();
        AnnotationValue defaultValue = config.value("defaultValue");
        if (defaultValue == null) {
            throw new IllegalStateException("the dynamic setting " + name
                    + " has no default value (" + point.getTargetInfo() + ")");
        }
        // The field is a Supplier<T>: the setting's type is T.
        Type valueType = point.getRequiredType().asParameterizedType().arguments().get(0);
        DynamicConfigPropertyDef def = new DynamicConfigPropertyDef(name,
                loadClass(valueType.name().toString()), defaultValue.asString());
        AnnotationValue label = dynamic.value("label");
        if (label != null) {
            def.setLabel(label.asString());
        }
        AnnotationValue description = dynamic.value("description");
        if (description != null) {
            def.setDescription(description.asString());
        }
        AnnotationValue requires = dynamic.value("requires");
        if (requires != null) {
            def.setRequires(requires.asStringArray());
        }
        return def;
    }

    private static Class<?> loadClass(String name) {
        try {
            return Class.forName(name);
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException("the type of a dynamic setting is not loadable: " + name, e);
        }
    }
}
